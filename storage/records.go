package storage

import (
	"context"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// RecordsByNumber returns incidents nums in their order, read in one
// transaction (incidentlib.RecordReader): the decoded record when the
// record cache holds its current version (shared with every reader: read
// only), otherwise a copy of its stored IL-JSON. A record the cache holds
// costs a lookup of its version, or none when it was seen at the store's
// current sequence (as recordReader.get); the others are returned as
// bytes, because a reader that needs only part of a record (the search
// index cutting highlights from its texts) reads it for a fraction of the
// cost of decoding the whole record.
func (st Incidents) RecordsByNumber(ctx context.Context, nums []uint32) ([]incidentlib.StoredRecord, error) {
	out := make([]incidentlib.StoredRecord, len(nums))
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		rr := st.db.recordReader(tx)
		for i, n := range nums {
			if rr.snap != 0 {
				// Seen at this sequence: nothing has changed it since.
				if c, ok := st.db.cache.Peek(n); ok && c.seenAt.Load() == rr.snap {
					out[i].Decoded = c.inc
					continue
				}
			}
			binary.BigEndian.PutUint32(rr.key[:], n)
			rec := seekGet(rr.c, rr.key[:])
			if len(rec) < 8 {
				continue
			}
			if rr.snap != 0 {
				if c, ok := st.db.cache.Peek(n); ok && c.version == binary.BigEndian.Uint64(rec) {
					c.seenAt.Store(rr.snap)
					out[i].Decoded = c.inc
					continue
				}
			}
			out[i].Raw = append([]byte(nil), rec[8:]...)
		}
		return nil
	})
	return out, err
}
