package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Compaction (the Maintenance room): the explicit compaction of old
// history, and the measure of live data that compact compares with the
// file's size.

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

// LiveSize is how much live data the store holds.
type LiveSize struct {
	Incidents int
	// RecordBytes is the size of the stored IL-JSON records.
	RecordBytes int64
	// KeyValueBytes is the size of every key and value in every bucket:
	// records, indexes, reverse links, change log and taxonomy.
	KeyValueBytes int64
}

// Live measures the live data from one read transaction, for comparison
// with the file size (see Compact).
func (st Maintenance) Live(ctx context.Context) (LiveSize, error) {
	var s LiveSize
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				s.KeyValueBytes += int64(len(k) + len(v))
				if string(name) == string(bucketIncidents) {
					s.Incidents++
					s.RecordBytes += int64(len(v))
				}
				return nil
			})
		})
	})
	return s, err
}
