package storage

import bolt "go.etcd.io/bbolt"

// Batch runs fn as a mutation that shares its transaction does (batch),
// for tests of what happens inside the shared transaction's commit.
func (db *DB) Batch(fn func(*bolt.Tx) error) error { return db.batch(fn) }
