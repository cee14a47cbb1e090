package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Change is one entry of the change log: the latest change of one
// incident, with the record as stored after it.
type Change struct {
	// Seq is the store sequence of the write that made the change; it is
	// also the version of the stored record.
	Seq uint64
	// ID is the incident's id.
	ID string
	// Deleted marks a tombstone: the incident was deleted at Seq.
	Deleted bool
	// Incident is the record as stored, nil for a tombstone. It is shared
	// with the record cache: callers must not change it.
	Incident *incidentlib.Incident
}

// ChangesSince returns, oldest first, up to limit changes with a sequence
// above seq, read in one transaction. The log keeps one entry per
// incident (its latest change, tombstones included), so applying the
// changes in order brings any copy that had applied everything up to seq
// level with the store as of the last change returned. Fewer than limit
// changes means none are left at the time of the read. limit must be
// positive.
func (db *DB) ChangesSince(ctx context.Context, seq uint64, limit int) ([]Change, error) {
	if limit <= 0 {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "limit must be positive, got %d", limit)
	}
	var out []Change
	err := db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChanges).Cursor()
		for k, v := c.Seek(u64key(seq + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var ch change
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("storage: change %d is corrupt: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, Change{Seq: ch.Seq, ID: ch.ID, Deleted: ch.Deleted})
			if ch.Deleted {
				continue
			}
			n, ok := incidentlib.ParseID(ch.ID)
			if !ok {
				return fmt.Errorf("storage: change %d names a malformed id %q", ch.Seq, ch.ID)
			}
			inc, err := db.getIncident(tx, n)
			if err != nil {
				return err
			}
			if inc == nil {
				return fmt.Errorf("storage: change %d of %s has no record", ch.Seq, ch.ID)
			}
			out[len(out)-1].Incident = inc
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
