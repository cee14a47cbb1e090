package storage_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestDamageFirstMetInABatchCommit: a page that goes bad between a shared
// transaction's writes and its commit is first met by bbolt inside the
// commit (freeing the page the rewritten leaf came from). That must be
// STORE_CORRUPT for the batch's writers, as everywhere else, and not end
// the process (bbolt's own Batch runs the commit in a goroutine of its own,
// with no recovery).
func TestDamageFirstMetInABatchCommit(t *testing.T) {
	path, incs := testutil.StoreFile(t, 300)
	layout := testutil.Layout(t, path)
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("incidents"))
		k, v := b.Cursor().First() // on the bucket's first leaf
		if err := b.Put(append([]byte(nil), k...), append([]byte(nil), v...)); err != nil {
			return err
		}
		// The disk fails now: the leaf's page, read and rewritten in
		// memory, is damaged under the transaction.
		testutil.BreakAt(t, path, layout, testutil.FlippedLeaf)
		return nil
	})
	var ce *storage.CorruptError
	if !errors.As(err, &ce) || incidentlib.ErrorCode(err) != incidentlib.ESTORECORRUPT {
		t.Fatalf("batch whose commit met a damaged page: %v (code %s), want a *CorruptError with STORE_CORRUPT", err, incidentlib.ErrorCode(err))
	}
	if ce.Page != layout.Leaf {
		t.Errorf("the error names page %d, the damaged page is %d", ce.Page, layout.Leaf)
	}
	if db.Maintenance().Corrupt() == nil {
		t.Error("the store does not report itself corrupt")
	}
	// The store writes nothing more.
	inc := *incs[len(incs)-1]
	inc.Title.En += " (changed)"
	_, err = db.Incidents().UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{})
	if incidentlib.ErrorCode(err) != incidentlib.ESTORECORRUPT {
		t.Errorf("a write after the damage: %v, want STORE_CORRUPT", err)
	}
}

// TestPanicInALoneWriteLeavesWritesRunning: a write that panics in its
// transaction, alone, ends its group commit's turn like any other: the
// writes after it run (before the fix they queued for good behind it).
func TestPanicInALoneWriteLeavesWritesRunning(t *testing.T) {
	db, err := storage.Open(filepath.Join(t.TempDir(), "p.db"), storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the write's panic did not reach its caller")
			}
		}()
		_ = db.GroupCommit(func(*bolt.Tx) error { panic("a bug in a write") })
	}()
	done := make(chan error, 1)
	go func() {
		_, err := db.Incidents().UpsertIncident(context.Background(), &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "after"}}, incidentlib.WriteOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute): // not a figure: a hang
		t.Fatal("a write after a panicked one still waits after 2 minutes")
	}
}
