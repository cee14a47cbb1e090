package storage_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestDurationIndexRebuiltAtOpen: a store written before the index of
// durations gets it at its next writable open, equal to the one writes
// keep, and check finds nothing missing.
func TestDurationIndexRebuiltAtOpen(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	mustImport(t, db, corpus(t, 400, 7))
	all, err := db.MatchSet(ctx, incidentlib.IncidentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := db.DurationsOf(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if before.ResolvedAfter.Count == 0 || before.DetectedAfter.Count == 0 {
		t.Fatalf("the corpus states no durations: %+v", before)
	}
	if err := storage.DropDurationIndex(db); err != nil {
		t.Fatal(err)
	}
	if problems, _ := db.Check(ctx); len(problems) == 0 {
		t.Fatal("check finds nothing missing without the index")
	}
	path := db.Path()
	db.Close()
	db, err = storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustCheck(t, db)
	after, err := db.DurationsOf(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("durations before the drop %+v, after the rebuild %+v", before, after)
	}
}
