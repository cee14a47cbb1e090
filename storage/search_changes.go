package storage

import (
	"context"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// HitRecord is a stored incident as the search index reads it to cut
// highlights: the decoded record when the record cache holds its current
// version (shared with every reader: read only), otherwise a copy of its
// stored IL-JSON. Both are empty when there is no such incident.
type HitRecord struct {
	Decoded *incidentlib.Incident
	Raw     []byte
}

// HitRecords returns incidents nums in their order, read in one
// transaction. A record the cache holds costs a lookup of its version;
// the others are returned as bytes, because the search index reads only
// their texts, which costs a fraction of decoding the whole record.
func (db *DB) HitRecords(ctx context.Context, nums []uint32) ([]HitRecord, error) {
	out := make([]HitRecord, len(nums))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketIncidents).Cursor()
		var key [4]byte
		for i, n := range nums {
			binary.BigEndian.PutUint32(key[:], n)
			rec := seekGet(c, key[:])
			if len(rec) < 8 {
				continue
			}
			if db.cache != nil {
				if ci, ok := db.cache.Peek(n); ok && ci.version == binary.BigEndian.Uint64(rec) {
					out[i].Decoded = ci.inc
					continue
				}
			}
			out[i].Raw = append([]byte(nil), rec[8:]...)
		}
		return nil
	})
	return out, err
}
