package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/incidentlib/incidentlib"
)

// Report is what Check found.
type Report struct {
	// Missing: there is no index at the path (serve builds one).
	Missing bool
	// IndexSeq and StoreSeq are the sequences of the index and the store.
	IndexSeq, StoreSeq uint64
	// Pending is how many changes of the store the index has yet to apply:
	// not a failure, the next serve or search applies them.
	Pending int
	// Problems are disagreements between the index and the store, one line
	// each; any is a failure (reindex repairs it).
	Problems []string
}

// Check compares the index at path with the store without changing
// either: every incident the index has applied must be in it, made from
// the same version of the record, and nothing else may be; and it must
// have been made from db (its path, and opts.StoreID as given to Open).
func Check(ctx context.Context, db Store, path string, opts Options) (*Report, error) {
	rep := &Report{StoreSeq: db.Seq()}
	// No directory, or one whose index was never saved (a full disk at
	// its first save): serve builds it.
	if _, err := os.Stat(filepath.Join(path, indexFile)); errors.Is(err, os.ErrNotExist) {
		rep.Missing = true
		return rep, nil
	}
	why, err := otherStore(path, identityOf(db, opts))
	if err != nil {
		why = err.Error()
	}
	if why != "" {
		rep.Problems = append(rep.Problems, fmt.Sprintf("search index: %s (serve rebuilds it)", why))
		return rep, nil
	}
	m, err := load(path)
	if err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("search index: %v", err))
		return rep, nil
	}
	seq := m.seq
	rep.IndexSeq = seq
	if seq > rep.StoreSeq {
		rep.Problems = append(rep.Problems, fmt.Sprintf("search index: at store sequence %d, ahead of the store at %d (made from another store)", seq, rep.StoreSeq))
		return rep, nil
	}

	// What the index holds: id -> sequence of the record it was made from.
	have := make(map[string]uint64, m.live)
	for _, sl := range m.slots {
		if sl.seq != 0 {
			have[incidentlib.FormatID(sl.num)] = sl.seq
		}
	}
	// What it should hold: the latest change of every incident, as of seq.
	const page = 10_000
	var from uint64
	for {
		changes, err := db.ChangesSince(ctx, from, page)
		if err != nil {
			return nil, err
		}
		for _, c := range changes {
			got, ok := have[c.ID]
			delete(have, c.ID)
			switch {
			case c.Seq > seq:
				rep.Pending++
			case c.Deleted && ok:
				rep.Problems = append(rep.Problems, fmt.Sprintf("search index: %s was deleted at %d but is still indexed", c.ID, c.Seq))
			case c.Deleted:
			case !ok:
				rep.Problems = append(rep.Problems, fmt.Sprintf("search index: %s (changed at %d) is missing", c.ID, c.Seq))
			case got != c.Seq:
				rep.Problems = append(rep.Problems, fmt.Sprintf("search index: %s is indexed as of %d, but its record was written at %d", c.ID, got, c.Seq))
			}
		}
		if len(changes) < page {
			break
		}
		from = changes[len(changes)-1].Seq
	}
	extra := make([]string, 0, len(have))
	for id := range have {
		extra = append(extra, id)
	}
	sort.Strings(extra)
	for _, id := range extra {
		rep.Problems = append(rep.Problems, fmt.Sprintf("search index: %s is indexed but not in the store", id))
	}
	sort.Strings(rep.Problems)
	return rep, nil
}

// CheckLines runs Check and says what it found in lines for the check
// command, and whether that is a failure.
func CheckLines(ctx context.Context, db Store, path string, opts Options) (lines []string, failed bool, err error) {
	rep, err := Check(ctx, db, path, opts)
	if err != nil {
		return nil, false, err
	}
	switch {
	case rep.Missing:
		return []string{fmt.Sprintf("search index: none at %s (serve builds it; reindex builds it now)", path)}, false, nil
	case len(rep.Problems) > 0:
		return rep.Problems, true, nil
	case rep.Pending > 0:
		return []string{fmt.Sprintf("search index: pending catch-up: %d changes (index at store sequence %d, store at %d); serve applies them at start-up",
			rep.Pending, rep.IndexSeq, rep.StoreSeq)}, false, nil
	}
	return []string{fmt.Sprintf("search index: ok (%s, at store sequence %d)", path, rep.IndexSeq)}, false, nil
}
