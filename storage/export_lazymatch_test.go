package storage

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// MatchShape says how match leaves the set of f before any reader builds
// it (lazymatch.go): how many parts it intersects after reduce, and
// whether unlisted incidents are taken out as it is read. Tests use it to
// check that their random filters reach the lazy paths.
func MatchShape(db *DB, f incidentlib.IncidentFilter) (parts int, minus bool, err error) {
	err = db.view(context.Background(), func(tx *bolt.Tx) error {
		ms, err := db.match(tx, f)
		if err != nil {
			return err
		}
		if ms.all {
			return nil
		}
		ms.reduce()
		parts, minus = len(ms.parts), ms.minus != nil
		return nil
	})
	return parts, minus, err
}

// SnapshotSets is how many filters the snapshot s keeps evaluated
// (matchmemo.go).
func SnapshotSets(s incidentlib.Snapshot) int { return len(s.(*snapshot).sets) }

// SetSnapshotSets makes snapshots keep their evaluations (on) or evaluate
// every read on its own, until the returned func restores it.
func SetSnapshotSets(on bool) func() {
	old := snapshotSets
	snapshotSets = on
	return func() { snapshotSets = old }
}
