package storage

import bolt "go.etcd.io/bbolt"

// Batch runs fn as a write that came while another ran does: in a batch
// of the group commit (groupCommit), in a goroutine of its own, for tests
// of what happens inside the shared transaction's commit.
func (db *DB) Batch(fn func(*bolt.Tx) error) error {
	errCh := make(chan error, 1)
	go (&writeBatch{db: db, calls: []batchCall{{fn: fn, err: errCh}}}).run()
	if err := <-errCh; err != errTrySolo {
		return err
	}
	return db.updateGuarded(fn)
}

// GroupCommit runs fn as a mutation's transaction (groupCommit).
func (db *DB) GroupCommit(fn func(*bolt.Tx) error) error { return db.groupCommit(fn) }
