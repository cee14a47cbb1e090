package storage

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// addContentAuthors adds to authors the author of every version of
// incident n whose content is the current record's. The four-eyes rule
// (DecideReview, SELF_REVIEW) compares the content's authors: a restore
// or an edit back to earlier content brings back what its first author
// wrote, and that author may not approve it, whoever wrote the version
// that brought it back and whatever was approved in between.
func addContentAuthors(tx *bolt.Tx, n uint32, authors map[string]bool) error {
	cur := tx.Bucket(bucketIncidents).Get(u32key(n))
	if len(cur) <= 8 {
		return nil
	}
	cur = cur[8:]
	c := tx.Bucket(bucketHistory).Cursor()
	prefix := u32key(n)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		e, err := decodeEntry(k, v)
		if err != nil {
			return err
		}
		switch e.Action {
		case incidentlib.ActionSubmit, incidentlib.ActionApprove, incidentlib.ActionRequestChanges, incidentlib.ActionDispute,
			incidentlib.ActionWithdraw, incidentlib.ActionPurge, incidentlib.ActionDelete:
			continue // no content written
		}
		if authors[e.Author] || len(k) != 8 {
			continue
		}
		ver := int(binary.BigEndian.Uint32(k[4:]))
		if rec := versionRecord(tx, n, ver); rec != nil && sameContent(rec, cur) {
			authors[e.Author] = true
		}
	}
	return nil
}
