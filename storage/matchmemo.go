package storage

import (
	"context"
	"reflect"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// One evaluation of a filter per request (issue 32): a request that
// FastReads answers reads in one snapshot (snapshot.go), and its page,
// totalCount, facets and years of one filter each call match in that
// snapshot's transaction. The snapshot keeps what match made there, so
// the later reads take the lazy set (lazymatch.go) as the earlier ones
// left it: counted, reduced, built at most once. What is kept is valid
// only in the transaction, which is the one state of the store the
// snapshot sees: never shared with another request (each has its own
// snapshot) nor across a write (a write is seen only by a new
// transaction, and Release drops what was kept).

// maxSnapshotSets bounds the filters one snapshot keeps: a query's
// connections seldom have more than a few filters, and each kept set may
// hold a built bitmap of up to one bit per incident.
const maxSnapshotSets = 4

// evaluated is a filter and its set, kept by a snapshot.
type evaluated struct {
	filter incidentlib.IncidentFilter
	ms     *matchSet
}

// snapshotSets is false when a test evaluates every read on its own
// (SetSnapshotSets).
var snapshotSets = true

// matchOf is match(tx, f) for the reads of ctx: when tx is the
// transaction of ctx's snapshot, a filter equal to one already evaluated
// in it gives that evaluation. The set is read only: never owned()
// (MatchSet keeps to match).
func (db *DB) matchOf(ctx context.Context, tx *bolt.Tx, f incidentlib.IncidentFilter) (*matchSet, error) {
	s, ok := ctx.Value(snapshotKey{}).(*snapshot)
	if !ok || s.db != db || s.tx != tx || !snapshotSets {
		return db.match(tx, f)
	}
	for _, e := range s.sets {
		if reflect.DeepEqual(e.filter, f) {
			return e.ms, nil
		}
	}
	ms, err := db.match(tx, f)
	if err != nil {
		return nil, err
	}
	if len(s.sets) == maxSnapshotSets {
		s.sets = append(s.sets[:0], s.sets[1:]...)
	}
	s.sets = append(s.sets, evaluated{filter: f, ms: ms})
	return ms, nil
}
