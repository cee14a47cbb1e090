package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// A read replica copies its primary's change feed (ChangesSince, served as
// GET /api/v1/changes) into its own store: ApplyChanges writes one page of
// changes and the position it reached in one transaction, so a replica that
// stops at any moment resumes from a position that matches its data
// exactly, without gaps or duplicates.

// metaFollowSeq holds, in a replica's store, the primary's sequence up to
// which the replica has applied the primary's changes (u64). A store that
// never followed a primary has no such key.
var metaFollowSeq = []byte("follow_seq")

// FollowSeq returns the primary sequence this store has applied up to, and
// whether the store follows a primary at all (it applied a page before).
func (db *DB) FollowSeq(ctx context.Context) (seq uint64, following bool, err error) {
	err = db.view(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(metaFollowSeq)
		seq, following = getU64(v), v != nil
		return nil
	})
	return seq, following, err
}

// ApplyChanges applies one page of a primary's changes, oldest first, in
// one write transaction: a change with a record stores it in place of any
// earlier version (updated_at and review kept exactly as given, every index
// and reverse link kept in step), a tombstone removes the incident if the
// store has it. The transaction also stores the position: the sequence of
// the last change. Nothing is stamped; records identical to the stored ones
// are left alone.
//
// from is the position the page was read after: it must be the stored
// position (0 for a store that never followed), else nothing is written and
// ECONFLICT is returned, so that a page is never applied twice or after a
// gap. Sequences must increase and exceed from. Records are validated
// against the taxonomy (EINVALID names the change), but links and
// organizations are not checked: the primary checked them, and a page read
// from a log that keeps only each incident's latest change may hold
// records whose links are completed by later pages. Returns the new
// position. If ctx ends during the transaction, nothing is written.
func (db *DB) ApplyChanges(ctx context.Context, from uint64, changes []Change) (uint64, error) {
	if len(changes) == 0 {
		return from, nil
	}
	var es incidentlib.Errors
	prev := from
	nums := make([]uint32, len(changes))
	for i, c := range changes {
		field := []string{"changes", fmt.Sprint(i)}
		if c.Seq <= prev {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(field, "seq"),
				"change %d has sequence %d, not above %d", i, c.Seq, prev))
		}
		prev = c.Seq
		n, ok := incidentlib.ParseID(c.ID)
		if !ok {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(field, "id"), "change %d (seq %d): %q is not an incident id", i, c.Seq, c.ID))
			continue
		}
		nums[i] = n
		if c.Deleted {
			continue
		}
		if c.Incident == nil || c.Incident.ID != c.ID {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, field, "change %d (seq %d) of %s carries no record of %s", i, c.Seq, c.ID, c.ID))
			continue
		}
		err := c.Incident.Validate()
		if err == nil {
			err = c.Incident.ValidateTerms(db.tax)
		}
		for _, e := range incidentlib.ErrorList(err) {
			es = append(es, &incidentlib.Error{Code: e.Code, Field: append(field, e.Field...),
				Message: fmt.Sprintf("change %d (seq %d) of %s: %s", i, c.Seq, c.ID, e.Message)})
		}
	}
	if len(es) > 0 {
		return from, es
	}
	last := changes[len(changes)-1].Seq
	err := db.update(ctx, func(w *writeTx) error {
		meta := w.tx.Bucket(bucketMeta)
		if cur := getU64(meta.Get(metaFollowSeq)); cur != from {
			return incidentlib.Errorf(incidentlib.ECONFLICT,
				"the store has applied its primary's changes up to %d, not %d: the page does not follow on", cur, from)
		}
		w.trusted = true
		for i, c := range changes {
			if i%128 == 0 {
				if err := ctx.Err(); err != nil {
					return ctxError(err)
				}
			}
			old, err := w.get(nums[i])
			if err != nil {
				return err
			}
			if c.Deleted {
				if old != nil {
					if err := w.remove(nums[i], old); err != nil {
						return err
					}
				}
				continue
			}
			if old != nil && sameRecord(old, c.Incident) {
				continue
			}
			if err := w.put(c.Incident); err != nil {
				return err
			}
		}
		return meta.Put(metaFollowSeq, u64key(last))
	})
	if err != nil {
		return from, err
	}
	return last, nil
}

// SeqAbove returns a channel that is closed once the store's sequence is
// above seq: at once if it already is, else at the first commit that
// raises it. Long polls of the change feed wait on it.
func (db *DB) SeqAbove(seq uint64) <-chan struct{} {
	ch := db.watch.wait()
	if db.Seq() > seq {
		return closedChan
	}
	return ch
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// seqWatch hands out one channel per sequence change, closed by publish.
type seqWatch struct {
	mu sync.Mutex
	ch chan struct{}
}

func (w *seqWatch) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *seqWatch) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// Link is a related or recurrence_of link of an incident.
type Link struct {
	From string // the incident that links
	Kind string // "related" or "recurrence_of"
	To   string // the incident linked to
}

// UpstreamLinks lists, sorted, the links to incidents that are not in the
// store: with Options.UpstreamLinks they resolve from an upstream library;
// without it Check reports them as dangling.
func (db *DB) UpstreamLinks(ctx context.Context) ([]Link, error) {
	var out []Link
	err := db.view(ctx, func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketIncidents)
		missing := func(id string) bool {
			n, ok := incidentlib.ParseID(id)
			return ok && ib.Get(u32key(n)) == nil
		}
		for _, lb := range []struct {
			bucket []byte
			kind   string
		}{{bucketRelatedRev, "related"}, {bucketRecurrences, "recurrence_of"}} {
			c := tx.Bucket(lb.bucket).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if len(k) != 8 {
					continue
				}
				to := incidentlib.FormatID(getU32(k[:4]))
				if missing(to) {
					out = append(out, Link{From: incidentlib.FormatID(getU32(k[4:])), Kind: lb.kind, To: to})
				}
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.From != b.From {
			return a.From < b.From
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.To < b.To
	})
	return out, err
}

func getU32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// RawChange is a change of the log with the record as stored: its
// canonical IL-JSON, the bytes Export writes.
type RawChange struct {
	Seq     uint64
	ID      string
	Deleted bool
	// Record is the stored IL-JSON (the caller's own copy), nil for a
	// tombstone.
	Record []byte
}

// RawChangesSince is ChangesSince with the stored bytes of each record
// instead of the decoded record: the change feed serves them as they are,
// without decoding and encoding every record again. It reads in a
// transaction of its own, outside any snapshot of ctx (Snapshot).
func (db *DB) RawChangesSince(ctx context.Context, seq uint64, limit int) ([]RawChange, error) {
	if limit <= 0 {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "limit must be positive, got %d", limit)
	}
	var out []RawChange
	err := db.viewLatest(ctx, func(tx *bolt.Tx) error { // every committed change, snapshot or not
		c := tx.Bucket(bucketChanges).Cursor()
		ib := tx.Bucket(bucketIncidents)
		for k, v := c.Seek(u64key(seq + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var ch change
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("storage: change %d is corrupt: %w", getU64(k), err)
			}
			rc := RawChange{Seq: ch.Seq, ID: ch.ID, Deleted: ch.Deleted}
			if !ch.Deleted {
				n, ok := incidentlib.ParseID(ch.ID)
				if !ok {
					return fmt.Errorf("storage: change %d names a malformed id %q", ch.Seq, ch.ID)
				}
				rec := ib.Get(u32key(n))
				if len(rec) < 8 {
					return fmt.Errorf("storage: change %d of %s has no record", ch.Seq, ch.ID)
				}
				rc.Record = append([]byte(nil), rec[8:]...)
			}
			out = append(out, rc)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
