package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The change log (incidentlib.ChangeLog): bucketChanges keeps, by
// sequence, the latest change of every incident, tombstones included, with
// the history's version and action of that change (Change.Version,
// Change.Action). The sequence of a change is also the stamp of the record
// it stored. Every version, not only the latest, is in the history feed
// (versionlog.go).

// ChangesSince returns, oldest first, up to limit changes with a sequence
// above seq, read in one transaction. The log keeps one entry per
// incident (its latest change, tombstones included), so applying the
// changes in order brings any copy that had applied everything up to seq
// level with the store as of the last change returned. Fewer than limit
// changes means none are left at the time of the read. limit must be
// positive. Like every reader of the log, it returns only what the store
// has published (Seq, read before the transaction): a commit's handler
// publishes its sequence after bbolt let other transactions see it, and a
// client handed a change above Seq would find its position refused as
// ahead of the store (a subscription's since: SEQUENCE_AHEAD).
func (st Incidents) ChangesSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out []incidentlib.Change
	head := st.Seq()
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		return walkChanges(tx, seq, head, limit, func(c incidentlib.Change, n uint32, rec []byte) error {
			if !c.Deleted {
				inc, err := st.db.decodeIncident(tx, n, rec, 0)
				if err != nil {
					return err
				}
				c.Incident = inc
			}
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RawChangesSince is ChangesSince with the stored bytes of each record
// instead of the decoded record (Change.Record, the canonical IL-JSON
// Export writes, the caller's own copy): the change feed serves them as
// they are, without decoding and encoding every record again. It reads in
// a transaction of its own, outside any snapshot of ctx (Snapshot).
func (st Incidents) RawChangesSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out []incidentlib.Change
	// Every published change (ChangesSince), snapshot or not.
	head := st.Seq()
	err := st.db.viewLatest(ctx, func(tx *bolt.Tx) error {
		return walkChanges(tx, seq, head, limit, func(c incidentlib.Change, _ uint32, rec []byte) error {
			if !c.Deleted {
				c.Record = append([]byte(nil), rec[8:]...)
			}
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walkChanges calls fn, oldest first, for up to limit changes of the log
// with a sequence above seq and at most head (the published sequence),
// with the incident's number and its stored record (version and IL-JSON,
// valid in tx only), both zero for a tombstone. A change that names no
// stored record is an error.
func walkChanges(tx *bolt.Tx, seq, head uint64, limit int, fn func(c incidentlib.Change, n uint32, rec []byte) error) error {
	c := tx.Bucket(bucketChanges).Cursor()
	ib := tx.Bucket(bucketIncidents)
	done := 0
	for k, v := c.Seek(u64key(seq + 1)); k != nil && done < limit && getU64(k) <= head; k, v = c.Next() {
		var ch change
		if err := json.Unmarshal(v, &ch); err != nil {
			return fmt.Errorf("storage: change %d is corrupt: %w", getU64(k), err)
		}
		var n uint32
		var rec []byte
		if !ch.Deleted {
			var ok bool
			if n, ok = incidentlib.ParseID(ch.ID); !ok {
				return fmt.Errorf("storage: change %d names a malformed id %q", ch.Seq, ch.ID)
			}
			if rec = ib.Get(u32key(n)); len(rec) < 8 {
				return fmt.Errorf("storage: change %d of %s has no record", ch.Seq, ch.ID)
			}
		}
		if err := fn(incidentlib.Change{Seq: ch.Seq, ID: ch.ID, Deleted: ch.Deleted, Version: ch.Version, Action: ch.Action}, n, rec); err != nil {
			return err
		}
		done++
	}
	return nil
}

// Seq returns the store's change sequence: it grows with every committed
// write. It does not touch the file.
func (st Incidents) Seq() uint64 { return st.db.seq.Load() }

// SeqAbove returns a channel that is closed once the store's sequence is
// above seq: at once if it already is, else at the first commit that
// raises it. Long polls of the change feed wait on it.
func (st Incidents) SeqAbove(seq uint64) <-chan struct{} {
	ch := st.db.watch.wait()
	if st.Seq() > seq {
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

func checkLimit(limit int) error {
	if limit <= 0 {
		return incidentlib.Errorf(incidentlib.EINVALID, "limit must be positive, got %d", limit)
	}
	return nil
}
