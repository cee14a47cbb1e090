//go:build !linux

package storage

// releaseMapped does nothing outside Linux (see importbatch_linux.go).
func (db *DB) releaseMapped() {}
