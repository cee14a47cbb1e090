package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The history feed (incidentlib.HistoryLog) and the explicit compaction
// of old history.

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
	err := st.db.viewLatest(ctx, func(tx *bolt.Tx) error {
		if c := getU64(tx.Bucket(bucketMeta).Get(metaHistoryCompacted)); seq < c {
			return incidentlib.Errorf(incidentlib.ESEQUENCECOMPACTED,
				"history up to sequence %d was compacted away; start again from a snapshot (position %d)", c, seq)
		}
		hb := tx.Bucket(bucketHistory)
		c := tx.Bucket(bucketVersionLog).Cursor()
		for k, v := c.Seek(u64key(seq + 1)); k != nil && len(out) < limit; k, v = c.Next() {
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

// CompactHistory removes, for every incident, the versions written
// before before but its latest one (the current record, or a deleted
// incident's tombstone and last record), with their records: an
// explicit administrator's command (incidentlib history compact), never
// automatic. The history feed then refuses positions below the highest
// sequence removed. Returns how many versions it removed.
func (st Maintenance) CompactHistory(ctx context.Context, before time.Time) (int, error) {
	removed := 0
	err := st.db.update(ctx, func(w *writeTx) error {
		removed = 0
		hb, vb, lb := w.tx.Bucket(bucketHistory), w.tx.Bucket(bucketVersions), w.tx.Bucket(bucketVersionLog)
		meta := w.tx.Bucket(bucketMeta)
		maxSeq := getU64(meta.Get(metaHistoryCompacted))
		type victim struct {
			key     []byte
			seq     uint64 // of the version
			nextSeq uint64 // of the version after it, under which its record is kept
		}
		var victims []victim
		type kv struct{ k, v []byte }
		var all []kv
		if err := hb.ForEach(func(k, v []byte) error {
			all = append(all, kv{append([]byte(nil), k...), v})
			return nil
		}); err != nil {
			return err
		}
		for i, x := range all {
			if i+1 == len(all) || binary.BigEndian.Uint32(all[i+1].k) != binary.BigEndian.Uint32(x.k) {
				continue // the incident's latest version stays
			}
			var e, next historyEntry
			if err := json.Unmarshal(x.v, &e); err != nil {
				return err
			}
			if err := json.Unmarshal(all[i+1].v, &next); err != nil {
				return err
			}
			// The record before a tombstone stays: the deleted incident
			// can still be restored.
			if next.Deleted && (i+2 == len(all) || binary.BigEndian.Uint32(all[i+2].k) != binary.BigEndian.Uint32(x.k)) {
				continue
			}
			t, err := incidentlib.ParseTimestamp(e.At)
			if err != nil || !t.Before(before) {
				continue
			}
			victims = append(victims, victim{x.k, e.Seq, next.Seq})
		}
		for _, v := range victims {
			if err := hb.Delete(v.key); err != nil {
				return err
			}
			if err := vb.Delete(u64key(v.nextSeq)); err != nil {
				return err
			}
			if err := lb.Delete(u64key(v.seq)); err != nil {
				return err
			}
			maxSeq = max(maxSeq, v.seq)
			removed++
		}
		if removed == 0 {
			return nil
		}
		// The sequence moves on so that replicas see a change.
		w.seq++
		return meta.Put(metaHistoryCompacted, u64key(maxSeq))
	})
	return removed, err
}
