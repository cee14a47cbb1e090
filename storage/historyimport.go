package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// Export and import of history (export --history, history import): one
// JSONL line per incident that has a history, deleted ones included, in
// id order:
//
//	{"id":"IL-0213","history":[{"version":1,"at":"…","author":"kim","role":"editor","action":"CREATE","record":{…}},…]}
//
// Each version carries its record (null for a delete and for content
// purged or compacted away). Importing the file into a store that holds
// none of its ids writes every version as given, and exporting that
// store again gives the same bytes.

// historyLine is one line of a history export.
type historyLine struct {
	ID      string           `json:"id"`
	History []historyVersion `json:"history"`
	// What the history needs beyond the strictest grammar ("gaps",
	// "unordered"): export writes it, import allows it.
	incidentlib.HistoryAllowances
}

type historyVersion struct {
	Version int `json:"version"`
	versionMeta
	Target int             `json:"target,omitempty"`
	Record json.RawMessage `json:"record"`
}

// ExportHistory writes every incident's history as JSONL in id order,
// from one read transaction.
func (st Versions) ExportHistory(ctx context.Context, w io.Writer) error {
	if st.db.noHistory {
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the store has no history until it is opened for writing once (upgraded)")
	}
	return st.db.view(ctx, func(tx *bolt.Tx) error {
		var cur *historyLine
		var curN uint32
		flush := func() error {
			if cur == nil {
				return nil
			}
			cur.HistoryAllowances = historyAllowancesOf(cur.versionsOf())
			b, err := json.Marshal(cur)
			if err != nil {
				return err
			}
			_, err = w.Write(append(b, '\n'))
			return err
		}
		err := tx.Bucket(bucketHistory).ForEach(func(k, v []byte) error {
			n, ver := binary.BigEndian.Uint32(k), int(binary.BigEndian.Uint32(k[4:]))
			if cur == nil || n != curN {
				if err := flush(); err != nil {
					return err
				}
				cur, curN = &historyLine{ID: incidentlib.FormatID(n)}, n
			}
			e, err := decodeEntry(k, v)
			if err != nil {
				return err
			}
			var rec json.RawMessage
			if !e.Deleted {
				rec = versionRecord(tx, n, ver)
			}
			cur.History = append(cur.History, historyVersion{Version: ver, versionMeta: e.versionMeta, Target: e.Target, Record: rec})
			return nil
		})
		if err != nil {
			return err
		}
		return flush()
	})
}

// versionsOf is a line's versions as the history grammar reads them.
func (l *historyLine) versionsOf() []incidentlib.IncidentVersion {
	out := make([]incidentlib.IncidentVersion, len(l.History))
	for k, v := range l.History {
		out[k] = incidentlib.IncidentVersion{ID: l.ID, Version: v.Version, At: v.At, Author: v.Author, AuthorRole: v.Role,
			Action: v.Action, ChangedFields: v.Changed, Comment: v.Comment, Record: v.Record, Deleted: v.Deleted, Target: v.Target}
	}
	return out
}

// ImportHistory reads a history export and writes every version as given
// (author, action, time), in one transaction: the history of an incident
// is replayed as a replica replays its primary's (no version is added).
// It is an administrator's operation (history import --db). Returns
// ECONFLICT if the store holds any history of an id of the file, EINVALID
// for a malformed line, a history that breaks the history grammar
// (validateHistory, with the allowances the line states), a
// member named twice, a record that fails validation or a link to an
// incident the store will not hold; a grammar error's field is the line
// (from 0), then ["history", index, member]. Returns how many incidents it
// wrote.
func (st Versions) ImportHistory(ctx context.Context, r io.Reader) (int, error) {
	var lines []historyLine
	var allowed incidentlib.HistoryAllowances // what the lines needed, for check
	err := iljson.EachLine(r, func(n int, b []byte) error {
		var l historyLine
		if err := json.Unmarshal(b, &l); err != nil {
			return incidentlib.Errorf(incidentlib.EINVALID, "line %d: %v", n, err)
		}
		if _, ok := incidentlib.ParseID(l.ID); !ok || len(l.History) == 0 {
			return incidentlib.Errorf(incidentlib.EINVALID, "line %d: no incident id or no history", n)
		}
		// The member grammar of the line, records included (they are
		// stored as given), and the history grammar.
		es := incidentlib.Errors(incidentlib.ErrorList(incidentlib.CheckMemberNames(b)))
		for _, e := range es {
			if len(e.Field) > 1 && e.Field[0] == incidentlib.HistoryMember {
				if k, err := strconv.Atoi(e.Field[1]); err == nil && k < len(l.History) {
					e.Message = fmt.Sprintf("incident %s version %d: %s", l.ID, l.History[k].Version, e.Message)
				}
			}
		}
		es = append(es, validateHistory(l.ID, l.versionsOf(), l.HistoryAllowances)...)
		allowed.Gaps = allowed.Gaps || l.Gaps
		allowed.Unordered = allowed.Unordered || l.Unordered
		if len(es) > 0 {
			for _, e := range es {
				e.Message = fmt.Sprintf("line %d: %s", n, e.Message)
				e.Field = append([]string{strconv.Itoa(n - 1)}, e.Field...) // the line, from 0 (importIncidents' histories index)
			}
			return es
		}
		lines = append(lines, l)
		return nil
	})
	if err != nil {
		return 0, err
	}
	err = st.db.update(ctx, func(w *writeTx) error {
		w.trusted = true
		var live []*incidentlib.Incident
		for _, l := range lines {
			n, _ := incidentlib.ParseID(l.ID)
			if _, e, err := lastEntry(w.tx, n); err != nil {
				return err
			} else if e != nil || w.tx.Bucket(bucketIncidents).Get(u32key(n)) != nil {
				return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"id"}, "incident %s already has a history in this store", l.ID)
			}
			for _, v := range l.History {
				c := incidentlib.Change{ID: l.ID, Version: v.Version, Deleted: v.Deleted, Entry: &incidentlib.IncidentVersion{
					ID: l.ID, Version: v.Version, At: v.At, Author: v.Author, AuthorRole: v.Role, Action: v.Action,
					ChangedFields: v.Changed, Comment: v.Comment, Deleted: v.Deleted, Target: v.Target}}
				w.applying = &c
				old, err := w.get(n)
				if err != nil {
					return err
				}
				switch {
				case v.Deleted:
					if old != nil {
						err = w.remove(n, old)
					} else {
						w.seq++
						if err = w.record(n, v.Version, nil, nil, 0, true); err == nil {
							err = w.logChange(n, true)
						}
					}
				case len(v.Record) == 0 || string(v.Record) == "null":
					w.seq++
					err = w.record(n, v.Version, nil, nil, 0, false)
				default:
					inc := new(incidentlib.Incident)
					if err = json.Unmarshal(v.Record, inc); err == nil {
						// Its id and version: validateHistory (historygrammar.go).
						if verr := inc.ValidateIncoming(st.db.Taxonomies().Taxonomy(), st.db.maxRecord, len(v.Record)); verr != nil {
							return incidentlib.Errorf(incidentlib.EINVALID, "incident %s version %d: %v", l.ID, v.Version, verr)
						}
						err = w.putEncoded(inc, bytes.Clone(v.Record))
					}
				}
				if err != nil {
					return fmt.Errorf("incident %s version %d: %w", l.ID, v.Version, err)
				}
			}
			w.applying = nil
			cur, err := w.get(n)
			if err != nil {
				return err
			}
			if cur != nil {
				live = append(live, cur)
				if err := w.checkOrgs(n, cur); err != nil {
					return err
				}
			}
		}
		if err := w.checkLinks(live, func(int) []string { return nil }); err != nil {
			return err
		}
		return allowHistory(w.tx, allowed)
	})
	if err != nil {
		return 0, err
	}
	return len(lines), nil
}
