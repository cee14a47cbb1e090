package storage

import (
	"context"

	bolt "go.etcd.io/bbolt"
)

// RawIncidents returns the stored IL-JSON of incidents nums (the caller's
// own copies), in their order, nil where there is no such incident, read
// in one transaction. The search index cuts its highlights from the texts
// of a page's hits: reading only those from the stored bytes costs a
// fraction of decoding the records.
func (db *DB) RawIncidents(ctx context.Context, nums []uint32) ([][]byte, error) {
	out := make([][]byte, len(nums))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		records := tx.Bucket(bucketIncidents)
		for i, n := range nums {
			if rec := records.Get(u32key(n)); len(rec) >= 8 {
				out[i] = append([]byte(nil), rec[8:]...)
			}
		}
		return nil
	})
	return out, err
}
