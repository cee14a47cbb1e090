package storage

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Upgrades of the store's format (metaSchema) in place, at a writable
// open, in the open's one transaction.

func historyBucket(name []byte) bool {
	return slices.ContainsFunc([][]byte{bucketHistory, bucketVersions, bucketVersionLog}, func(b []byte) bool { return string(b) == string(name) })
}

func newerStore(path string, got uint32) error {
	return fmt.Errorf("%s has store format version %d, newer than this program's version %d: use a newer incidentlib", path, got, schemaVersion)
}

// migrate upgrades a store of format version from to schemaVersion.
//
// 1 to 2 (the history): every incident gets version 1, written by
// "migration" with the action IMPORT at its updated_at (else now), in the
// history and the version log (at the sequence of the write that stored
// it, so that a replica following from 0 receives it); its review state
// is REVIEWED where review.reviewed_at is set and DRAFT otherwise, which
// is how a record without review_state reads (Incident.State), so no
// record is rewritten: only the REVIEWED posting is added.
func (db *DB) migrate(tx *bolt.Tx, from uint32) error {
	if from != 1 {
		return fmt.Errorf("no upgrade from format version %d", from)
	}
	now := db.Now().UTC().Format("2006-01-02T15:04:05.999999999Z07:00")
	hb, lb := tx.Bucket(bucketHistory), tx.Bucket(bucketVersionLog)
	count := 0
	err := tx.Bucket(bucketIncidents).ForEach(func(k, v []byte) error {
		if len(k) != 4 || len(v) < 8 {
			return fmt.Errorf("incident key %x: malformed entry", k)
		}
		n := binary.BigEndian.Uint32(k)
		var probe struct {
			UpdatedAt string `json:"updated_at"`
			Version   int    `json:"version"`
		}
		if err := json.Unmarshal(v[8:], &probe); err != nil {
			return fmt.Errorf("incident %s: %w", incidentlib.FormatID(n), err)
		}
		ver := max(probe.Version, 1)
		seq := binary.BigEndian.Uint64(v[:8])
		at := probe.UpdatedAt
		if at == "" {
			at = now
		}
		e, _ := json.Marshal(historyEntry{Seq: seq, At: at, Author: incidentlib.AuthorMigration, Action: incidentlib.ActionImport})
		if err := hb.Put(histKey(n, ver), e); err != nil {
			return err
		}
		count++
		return lb.Put(u64key(seq), histKey(n, ver))
	})
	if err != nil {
		return err
	}
	pb := tx.Bucket(bucketPostings)
	if r := pb.Get([]byte(postReviewed)); r != nil {
		if err := pb.Put([]byte(postState(incidentlib.ReviewReviewed)), slices.Clone(r)); err != nil {
			return err
		}
	}
	db.fault.logger.Info("store upgraded", "path", db.path, "from_format", from, "to_format", schemaVersion,
		"incidents", count, "history", "every incident at version 1 (IMPORT by migration)")
	return nil
}
