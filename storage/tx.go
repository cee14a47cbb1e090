package storage

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The store's transactions: reads (a request's snapshot or their own),
// the check before a write, and writes with their guards.

// view runs fn in a read transaction, failing early if ctx is done: the
// snapshot's of ctx if it has one of db's (Snapshot), else its own.
func (db *DB) view(ctx context.Context, fn func(*bolt.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	defer db.recoverFault(&err)
	defer faultGuard(debug.SetPanicOnFault(true))
	if s, ok := ctx.Value(snapshotKey{}).(*snapshot); ok && s.db == db {
		if s.released {
			return errors.New("storage: read through a snapshot already released")
		}
		if s.tx == nil {
			tx, err := db.bolt.Begin(false)
			if err != nil {
				return err
			}
			s.tx = tx
		}
		return fn(s.tx)
	}
	return db.viewLatest(ctx, fn)
}

// findEach looks each of keys up in one read transaction (view) and
// returns what it found in the order of keys, nil where it found nothing:
// open gives the transaction's lookup (a cursor or reader of its own,
// made once), called once per key; its error ends the read.
func findEach[T any](ctx context.Context, db *DB, keys []string, open func(*bolt.Tx) func(string) (*T, error)) ([]*T, error) {
	out := make([]*T, len(keys))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		get := open(tx)
		for i, k := range keys {
			v, err := get(k)
			if err != nil {
				return err
			}
			out[i] = v
		}
		return nil
	})
	return out, err
}

// viewLatest runs fn in a read transaction of its own, whatever snapshot
// ctx has: for reads that must see every committed change (the search
// index catching up with the store).
//
// It refuses while ctx's snapshot of db holds a transaction: one goroutine
// holding two read transactions can deadlock against a writer that waits
// for the first to grow the file's mapping (the second waits behind it).
func (db *DB) viewLatest(ctx context.Context, fn func(*bolt.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	defer db.recoverFault(&err)
	defer faultGuard(debug.SetPanicOnFault(true))
	if s, ok := ctx.Value(snapshotKey{}).(*snapshot); ok && s.db == db && s.tx != nil {
		return errSnapshotOpen
	}
	tx, err := db.bolt.Begin(false)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return incidentlib.Errorf(incidentlib.ETIMEOUT, "the request ran out of time")
	}
	return err
}

// writable is nil when a write transaction of its own may start for
// ctx: ctx is live (ETIMEOUT when it ran out), the store takes writes
// (refuseWrite: a corrupt or full store) and ctx does not run under a
// log group (outsideGroup). update, adminUpdate and writeToken ask it
// first.
func (db *DB) writable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	if err := db.refuseWrite(); err != nil {
		return err
	}
	return db.outsideGroup(ctx) // loggroup.go
}

// update runs fn in a write transaction and publishes the new sequence.
func (db *DB) update(ctx context.Context, fn func(*writeTx) error) error {
	if err := db.writable(ctx); err != nil {
		return err
	}
	var seq uint64
	start := time.Now()
	err := db.updateGuarded(func(tx *bolt.Tx) error {
		w := newWriteTx(db, tx)
		w.begin(ctx, "", incidentlib.BootstrapAdmin.Name)
		logged, err := w.startLogged(ctx) // a cluster log's write (cluster.go)
		if err != nil {
			return err
		}
		if err := fn(w); err != nil {
			return err
		}
		if err := w.flush(); err != nil {
			return err
		}
		seq = w.seq
		return w.endLogged(logged, nil)
	})
	if err := db.writeError(err); err != nil {
		return err
	}
	db.observeCommit(time.Since(start))
	db.publish(seq)
	return nil
}

// updateGuarded is bbolt's Update under the fault recovery.
func (db *DB) updateGuarded(fn func(*bolt.Tx) error) (err error) {
	defer db.recoverFault(&err)
	defer faultGuard(debug.SetPanicOnFault(true))
	return updateTx(db.bolt, fn)
}
