package storage

import "github.com/incidentlib/incidentlib"

// The store implements every capability the root package declares: its
// consumers take these interfaces, never *DB.
var (
	_ incidentlib.IncidentService     = (*DB)(nil)
	_ incidentlib.OrganizationService = (*DB)(nil)
	_ incidentlib.TaxonomyService     = (*DB)(nil)
	_ incidentlib.IncidentWriter      = (*DB)(nil)
	_ incidentlib.ChangeLog           = (*DB)(nil)
	_ incidentlib.ChangeApplier       = (*DB)(nil)
	_ incidentlib.IncidentSets        = (*DB)(nil)
	_ incidentlib.RecordReader        = (*DB)(nil)
	_ incidentlib.SourceCheckStore    = (*DB)(nil)
	_ incidentlib.StoreMonitor        = (*DB)(nil)
	_ incidentlib.Backuper            = (*DB)(nil)
	_ incidentlib.TokenService        = (*DB)(nil)
	_ incidentlib.TaxonomyAdmin       = (*DB)(nil)
	_ incidentlib.TaxonomyLog         = (*DB)(nil)
	_ incidentlib.TaxonomyApplier     = (*DB)(nil)
	_ incidentlib.HistoryService      = (*DB)(nil)
	_ incidentlib.HistoryWriter       = (*DB)(nil)
	_ incidentlib.HistoryLog          = (*DB)(nil)
)
