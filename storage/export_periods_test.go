package storage

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// DropPeriodIndex removes the period postings and their marker, as a store
// written before them holds none.
func DropPeriodIndex(db *DB) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		pb := tx.Bucket(bucketPostings)
		var names [][]byte
		for _, p := range periodPrefixes {
			c := pb.Cursor()
			for k, _ := c.Seek([]byte(p)); k != nil && bytes.HasPrefix(k, []byte(p)); k, _ = c.Next() {
				names = append(names, bytes.Clone(k))
			}
		}
		for _, k := range names {
			if err := pb.Delete(k); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(metaPeriods)
	})
}

// PeriodPrefixes are the prefixes of the period postings' names.
var PeriodPrefixes = periodPrefixes
