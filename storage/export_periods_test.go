package storage

// DropPeriodIndex removes the period postings and their marker, as a store
// written before them holds none.
func DropPeriodIndex(db *DB) error {
	return dropIndex(db, metaPeriods, periodPrefixes...) // export_durations_test.go
}

// PeriodPrefixes are the prefixes of the period postings' names.
var PeriodPrefixes = periodPrefixes
