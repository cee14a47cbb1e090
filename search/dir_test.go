package search

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestOneDirectoryTwoStores points the indexes of two stores at one
// directory, as two servers given the same --search-index would: the
// second is refused while the first holds it, and each store's index is
// rebuilt from its own store when it takes the directory over, so nothing
// goes missing from either's search.
func TestOneDirectoryTwoStores(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "shared.search")
	incsA := generated(t, 200, 1)
	incsB, err := gen.Generate(gen.Options{Count: 150, Seed: 2, FirstID: 5000, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range incsB {
		inc.Related, inc.RecurrenceOf = nil, ""
	}
	a, b := searchStore(t, incsA), searchStore(t, incsB)
	if a.StoreID() == "" || a.StoreID() == b.StoreID() {
		t.Fatalf("store ids %q and %q", a.StoreID(), b.StoreID())
	}

	xa, err := Open(ctx, a.Incidents(), dir, Options{Follow: true, StoreID: a.StoreID()})
	if err != nil {
		t.Fatal(err)
	}
	// A second server on the same directory is refused, naming it and the holder.
	if xb, err := Open(ctx, b.Incidents(), dir, Options{StoreID: b.StoreID()}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), a.Path()) {
		if xb != nil {
			xb.Close()
		}
		t.Fatalf("a second index on a held directory: %v", err)
	}
	if _, err := Rebuild(ctx, b.Incidents(), dir, Options{StoreID: b.StoreID()}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a rebuild of a held directory: %v", err)
	}
	extra := *incsA[0]
	extra.ID, extra.Title = "IL-0900", incidentlib.Text{En: "Quetzal frobnication outage"}
	if _, err := a.Incidents().UpsertIncident(ctx, &extra, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := xa.Close(); err != nil {
		t.Fatal(err)
	}

	// B takes the directory over: the index of A is not B's, and is rebuilt.
	if _, err := Open(ctx, b.Incidents(), dir, Options{StoreID: b.StoreID()}); !errors.Is(err, ErrRebuild) {
		t.Fatalf("B opened A's index: %v", err)
	}
	xb, err := Rebuild(ctx, b.Incidents(), dir, Options{StoreID: b.StoreID()})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := xb.DocCount(); n != uint64(len(incsB)) {
		t.Errorf("B's index holds %d incidents, want %d", n, len(incsB))
	}
	if got := ids(t, xb, "quetzal"); len(got) != 0 {
		t.Errorf("B's search finds A's incidents: %v", got)
	}
	if err := xb.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Check(ctx, b.Incidents(), dir, Options{StoreID: b.StoreID()}); err != nil || len(rep.Problems) > 0 || rep.Pending > 0 {
		t.Fatalf("check of B's index: %+v %v", rep, err)
	}
	if rep, err := Check(ctx, a.Incidents(), dir, Options{StoreID: a.StoreID()}); err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "another store") {
		t.Fatalf("check of A against B's index: %+v %v", rep, err)
	}

	// A again: rebuilt from A, all of it, the write made before included.
	if _, err := Open(ctx, a.Incidents(), dir, Options{StoreID: a.StoreID()}); !errors.Is(err, ErrRebuild) {
		t.Fatalf("A opened B's index: %v", err)
	}
	xa, err = Rebuild(ctx, a.Incidents(), dir, Options{StoreID: a.StoreID()})
	if err != nil {
		t.Fatal(err)
	}
	defer xa.Close()
	if n, _ := xa.DocCount(); n != uint64(len(incsA)+1) {
		t.Errorf("A's index holds %d incidents, want %d", n, len(incsA)+1)
	}
	if got := ids(t, xa, "quetzal"); len(got) != 1 || got[0] != "IL-0900" {
		t.Errorf("A's search for its last write: %v", got)
	}
	if _, err := os.Stat(dir + ".new"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rebuild left %s.new", dir)
	}
}

// TestStoreIDTellsStoresAtOnePath replaces a store by another at the same
// path: only Options.StoreID, the store's id the caller names, tells the
// index it was made from the first (the path and a sequence that is not
// ahead are the same), so Open asks for a rebuild and Check reports it;
// without it, the path alone is compared.
func TestStoreIDTellsStoresAtOnePath(t *testing.T) {
	ctx := context.Background()
	storePath := filepath.Join(t.TempDir(), "lib.db")
	dir := storePath + ".search"
	open := func(incs []*incidentlib.Incident) *storage.DB {
		t.Helper()
		db, err := storage.Open(storePath, storage.Options{Taxonomy: seeds.MustTaxonomy()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			t.Fatal(err)
		}
		return db
	}
	a := open(generated(t, 20, 1))
	idA := a.StoreID()
	x, err := Open(ctx, a.Incidents(), dir, Options{StoreID: idA})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := os.Remove(storePath); err != nil {
		t.Fatal(err)
	}
	b := open(generated(t, 40, 2)) // more changes than a: the sequence does not give it away
	defer b.Close()
	if b.StoreID() == "" || b.StoreID() == idA {
		t.Fatalf("store ids %q and %q", idA, b.StoreID())
	}

	if rep, err := Check(ctx, b.Incidents(), dir, Options{StoreID: b.StoreID()}); err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "another store") {
		t.Fatalf("check with the new store's id: %+v %v", rep, err)
	}
	if x, err := Open(ctx, b.Incidents(), dir, Options{StoreID: b.StoreID()}); !errors.Is(err, ErrRebuild) || !strings.Contains(err.Error(), idA) {
		if x != nil {
			x.Close()
		}
		t.Fatalf("open with the new store's id: %v, want ErrRebuild naming %s", err, idA)
	}
	x, err = Open(ctx, b.Incidents(), dir, Options{})
	if err != nil {
		t.Fatalf("open without a store id (the path alone is compared): %v", err)
	}
	x.Close()
}
