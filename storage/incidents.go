package storage

import "github.com/incidentlib/incidentlib"

// Incidents is the store's room of incidents: their records and indexes,
// the reads over them (lists, counts, facets, sets, aggregates, similar
// incidents, read snapshots), the change log and its application on a
// follower, and the writes of incidents (imports, upserts, deletions and
// the review workflow, which writes a version into the history). DB.Incidents
// returns it.
type Incidents struct {
	db *DB
}

// Path is the store's file: a search index built from the incidents
// records it (search.Store).
func (st Incidents) Path() string { return st.db.Path() }

// StoreID is the store's identity (DB.StoreID): a search index built from
// the incidents records it, so that an index is never shared by two
// stores (search.Open finds it on its store).
func (st Incidents) StoreID() string { return st.db.StoreID() }

// search.Open's type assertion on its store.
var _ interface{ StoreID() string } = Incidents{}

var (
	_ incidentlib.IncidentService    = Incidents{}
	_ incidentlib.IncidentSets       = Incidents{}
	_ incidentlib.IncidentAggregates = Incidents{}
	_ incidentlib.Snapshots          = Incidents{}
	_ incidentlib.ChangeLog          = Incidents{}
	_ incidentlib.ChangeApplier      = Incidents{}
	_ incidentlib.RecordReader       = Incidents{}
	_ incidentlib.SourceCheckStore   = Incidents{}
	_ incidentlib.IncidentWriter     = Incidents{}
	_ incidentlib.HistoryWriter      = Incidents{}
)
