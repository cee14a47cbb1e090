package storage

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// releaseMapped drops the store's file pages from the process's resident
// memory (madvise MADV_DONTNEED on bbolt's shared, read-only mapping of
// the file; the pages stay in the page cache and are read again on the
// next touch). A bulk import touches every page of the indexes it grows,
// and without this its resident memory would grow with the store, not
// with its batch. It runs inside a read transaction, so the mapping is
// not replaced meanwhile.
func (db *DB) releaseMapped() {
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		size := tx.Size()
		if size <= 0 {
			return nil
		}
		// The address as bbolt gives it (a uintptr), straight to the
		// system call: no Go pointer is made of it.
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, db.bolt.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
		return nil
	})
}
