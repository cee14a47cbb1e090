package storage

import (
	"context"
	"errors"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Read snapshots (incidentlib.Snapshots): a request that reads the store
// level by level (graph.FastReads) sees one state of it and begins one
// read transaction, not one per batch.
//
// A snapshot is the context of its own reads: the public read methods find
// it as the value of snapshotKey (view) and read in its transaction. The
// snapshot is made only by ReadSnapshot and never leaves this package as a
// context: callers hold an incidentlib.Snapshot and call its methods.

type snapshotKey struct{}

var errSnapshotOpen = errors.New("storage: a read of its own was asked while this context's snapshot holds a transaction (release it first)")

// snapshot is one state of the store, read in tx, and the context its
// reads run with (the one given to ReadSnapshot, with itself as the value
// of snapshotKey): one allocation per snapshot.
type snapshot struct {
	context.Context
	db       *DB
	tx       *bolt.Tx // begun by the first read
	released bool
	records  *recordReader // of tx, made by the first read of records
	// sets are the filters evaluated in tx, the last maxSnapshotSets of
	// them, so that a page, its count, facets and years evaluate their
	// filter once (matchOf); gone at Release, with tx.
	sets []evaluated
}

// ReadSnapshot returns a snapshot whose reads share one read transaction,
// begun by the first of them, until Release; see incidentlib.Snapshot for
// its rules. A read transaction is not safe for concurrent use, hence one
// goroutine at a time; and while it is open, that goroutine must not begin
// another (a writer waiting to grow the file's mapping would wait for the
// first while the second waits for it). RawChangesSince never reads
// through a snapshot.
func (st Incidents) ReadSnapshot(ctx context.Context) incidentlib.Snapshot {
	return &snapshot{Context: ctx, db: st.db}
}

// Value makes the snapshot the value of snapshotKey.
func (s *snapshot) Value(key any) any {
	if _, ok := key.(snapshotKey); ok {
		return s
	}
	return s.Context.Value(key)
}

// Release ends the snapshot's transaction; reads after it fail.
func (s *snapshot) Release() {
	if s.tx != nil {
		_ = s.tx.Rollback()
		s.tx, s.records, s.sets = nil, nil, nil
	}
	s.released = true
}

func (s *snapshot) FindIncidentsByIDs(_ context.Context, ids []string) ([]*incidentlib.Incident, error) {
	return s.db.Incidents().FindIncidentsByIDs(s, ids)
}

func (s *snapshot) FindIncidents(_ context.Context, filter incidentlib.IncidentFilter, order incidentlib.IncidentOrder, page incidentlib.PageArgs) (*incidentlib.IncidentPage, error) {
	return s.db.Incidents().FindIncidents(s, filter, order, page)
}

func (s *snapshot) Facets(_ context.Context, filter incidentlib.IncidentFilter, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	return s.db.Incidents().Facets(s, filter, kinds)
}

func (s *snapshot) Years(_ context.Context, filter incidentlib.IncidentFilter) ([]incidentlib.YearCount, error) {
	return s.db.Incidents().Years(s, filter)
}

func (s *snapshot) RecurrenceIDs(_ context.Context, ids []string) ([][]string, error) {
	return s.db.Incidents().RecurrenceIDs(s, ids)
}

func (s *snapshot) CountIncidentsBy(_ context.Context, keys []incidentlib.CountKey) ([]int, error) {
	return s.db.Incidents().CountIncidentsBy(s, keys)
}

func (s *snapshot) FindOrganizationsBySlugs(_ context.Context, slugs []string) ([]*incidentlib.Organization, error) {
	return s.db.Taxonomies().FindOrganizationsBySlugs(s, slugs)
}

// recordReaderIn is db.recordReader(tx), kept for the snapshot of ctx when
// tx is that snapshot's transaction: the reads of one request (a level each)
// then share one cursor and bucket handle.
func (db *DB) recordReaderIn(ctx context.Context, tx *bolt.Tx) *recordReader {
	if s, ok := ctx.Value(snapshotKey{}).(*snapshot); ok && s.db == db && s.tx == tx {
		if s.records == nil {
			s.records = db.recordReader(tx)
		}
		return s.records
	}
	return db.recordReader(tx)
}
