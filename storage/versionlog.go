package storage

import (
	"context"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The history feed (incidentlib.HistoryLog). The explicit compaction of
// old history, which the feed refuses positions below, is the maintenance
// room's (compact.go).

// metaHistoryCompacted holds the highest store sequence whose version a
// history compaction removed (u64): the history feed refuses positions
// below it with ESEQUENCECOMPACTED.
var metaHistoryCompacted = []byte("history_compacted_seq")

// VersionsSince returns, oldest first, up to limit versions written after
// seq, each with its history entry and its record's bytes
// (Change.Record); see incidentlib.HistoryLog.
func (st Versions) VersionsSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if st.db.noHistory {
		return nil, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the store has no history until it is opened for writing once (upgraded)")
	}
	var out []incidentlib.Change
	head := st.db.seq.Load() // what is published (Incidents.ChangesSince)
	err := st.db.viewLatest(ctx, func(tx *bolt.Tx) error {
		if c := getU64(tx.Bucket(bucketMeta).Get(metaHistoryCompacted)); seq < c {
			return incidentlib.Errorf(incidentlib.ESEQUENCECOMPACTED,
				"history up to sequence %d was compacted away; start again from a snapshot (position %d)", c, seq)
		}
		hb := tx.Bucket(bucketHistory)
		c := tx.Bucket(bucketVersionLog).Cursor()
		for k, v := c.Seek(u64key(seq + 1)); k != nil && len(out) < limit && getU64(k) <= head; k, v = c.Next() {
			if len(v) != 8 {
				continue
			}
			n, ver := binary.BigEndian.Uint32(v), int(binary.BigEndian.Uint32(v[4:]))
			e, err := decodeEntry(v, hb.Get(v))
			if err != nil {
				return err
			}
			id := incidentlib.FormatID(n)
			ch := incidentlib.Change{Seq: getU64(k), ID: id, Deleted: e.Deleted, Version: ver, Action: e.Action, Entry: e.version(id, ver, nil)}
			if !e.Deleted {
				ch.Record = versionRecord(tx, n, ver)
			}
			out = append(out, ch)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
