package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// TestSnapshot: reads made through a snapshot share one read transaction
// and see the store as it was when the snapshot began, whatever is written
// meanwhile; after release the snapshot refuses to read, and the store
// itself sees the writes.
func TestSnapshot(t *testing.T) {
	db := MustOpenDB(t)
	incs := corpus(t, 500, 1) // enough for the writes below to find free pages in the mapping
	mustImport(t, db, incs)
	ctx := context.Background()
	id := incs[0].ID

	txBefore, seqAtSnapshot := db.Maintenance().StoreStats().ReadTxTotal, db.Incidents().Seq()
	snap := db.Incidents().ReadSnapshot(ctx)
	t.Cleanup(snap.Release) // before the store closes, if the test stops early
	if n := db.Maintenance().StoreStats().ReadTxTotal - txBefore; n != 0 {
		t.Fatalf("a snapshot began %d transactions before its first read", n)
	}
	read := func(r incidentlib.Reader) (string, int, error) {
		got, err := r.FindIncidentsByIDs(ctx, []string{id})
		if err != nil {
			return "", 0, err
		}
		page, err := r.FindIncidents(ctx, incidentlib.IncidentFilter{}, incidentlib.IncidentOrder{}, incidentlib.PageArgs{})
		if err != nil {
			return "", 0, err
		}
		if got[0] == nil {
			return "", page.TotalCount, nil
		}
		return got[0].Title.En, page.TotalCount, nil
	}
	title, total, err := read(snap)
	if err != nil || title != incs[0].Title.En || total != len(incs) {
		t.Fatalf("through the snapshot: %q, %d, %v", title, total, err)
	}

	// The writes run beside the snapshot, as a mutation beside a query. (A
	// write that had to grow the file's mapping would wait for the
	// snapshot's release: the import above leaves them free pages.)
	changed := *incs[0]
	changed.Title.En = "Changed while a snapshot was open"
	wrote := make(chan error, 1)
	go func() {
		if _, err := db.Incidents().UpsertIncident(ctx, &changed, incidentlib.WriteOptions{}); err != nil {
			wrote <- err
			return
		}
		_, err := db.Incidents().DeleteIncident(ctx, incs[1].ID, incidentlib.WriteOptions{})
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writes waited for the snapshot: this test no longer checks what a snapshot sees of later writes")
	}
	title, total, err = read(snap)
	if err != nil || title != incs[0].Title.En || total != len(incs) {
		t.Fatalf("the snapshot saw a later write: %q, %d, %v", title, total, err)
	}
	if n := db.Maintenance().StoreStats().ReadTxTotal - txBefore; n != 1 {
		t.Fatalf("reads through the snapshot began %d transactions, want 1", n)
	}
	// The change log is never read through a snapshot: the search index
	// catching up must see every committed change.
	fresh := db.Incidents().ReadSnapshot(ctx) // nothing read through it yet
	t.Cleanup(fresh.Release)
	changes, err := db.Incidents().RawChangesSince(ctx, seqAtSnapshot, 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range changes {
		seen[fmt.Sprintf("%s %v", c.ID, c.Deleted)] = true
	}
	if !seen[id+" false"] || !seen[incs[1].ID+" true"] {
		t.Fatalf("the change log beside a snapshot has %d changes after the snapshot began, without both writes: %v", len(changes), seen)
	}

	snap.Release()
	snap.Release() // twice is harmless
	if _, _, err := read(snap); err == nil {
		t.Fatal("a released snapshot still reads")
	}
	title, total, err = read(db.Reads())
	if err != nil || title != changed.Title.En || total != len(incs)-1 {
		t.Fatalf("after the snapshot: %q, %d, %v", title, total, err)
	}
}

var _ incidentlib.Snapshots = storage.Incidents{}
