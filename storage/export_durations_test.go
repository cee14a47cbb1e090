package storage

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// DropDurationIndex removes the duration postings and their marker, as a
// store written before the index holds none.
func DropDurationIndex(db *DB) error {
	return dropIndex(db, metaDurations, prefixDuration)
}

// dropIndex removes the postings named with prefixes and the marker of
// their index (indexOnce), as a store written before the index holds
// none.
func dropIndex(db *DB, marker []byte, prefixes ...string) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		pb := tx.Bucket(bucketPostings)
		var names [][]byte
		for _, p := range prefixes {
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
		return tx.Bucket(bucketMeta).Delete(marker)
	})
}
