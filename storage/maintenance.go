package storage

import "github.com/incidentlib/incidentlib"

// Maintenance is the store's room of the operator's work on the file: its
// figures (the monitor), backups and exports, the consistency check,
// compaction of the history, and the first fault a transaction found.
// The migrations (migrate.go) and purges (purge.go) run from Open and from
// the incidents' writes. DB.Maintenance returns it.
type Maintenance struct {
	db *DB
}

var (
	_ incidentlib.StoreMonitor = Maintenance{}
	_ incidentlib.Backuper     = Maintenance{}
)
