package storage

import "github.com/incidentlib/incidentlib"

// Versions is the store's room of the incidents' history: every version
// of an incident and its entry (reads, the version log a search index
// follows) and the history's import and export (historyimport.go). Its
// writes are the incidents' (Incidents: a restore, a review or a purge
// writes a version). DB.Versions returns it; it is not named History
// because that is its first method's name (incidentlib.HistoryService).
type Versions struct {
	db *DB
}

var (
	_ incidentlib.HistoryService  = Versions{}
	_ incidentlib.HistoryLog      = Versions{}
	_ incidentlib.HistoryImporter = Versions{}
)
