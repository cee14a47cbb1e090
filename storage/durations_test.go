package storage_test

import (
	"context"
	"reflect"
	"strings"
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
	all, err := db.Incidents().MatchSet(ctx, incidentlib.IncidentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := db.Incidents().DurationsOf(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if before.ResolvedAfter.Count == 0 || before.DetectedAfter.Count == 0 {
		t.Fatalf("the corpus states no durations: %+v", before)
	}
	if err := storage.DropDurationIndex(db); err != nil {
		t.Fatal(err)
	}
	path := db.Path()
	db.Close()
	// Read-only, the store is not written: check says the index is to
	// come, and finds no problem.
	ro, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	problems, warnings, err := ro.Maintenance().CheckAll(ctx)
	ro.Close()
	if err != nil || len(problems) > 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "durations") {
		t.Fatalf("read-only check of a store without the index: %v %v %v", err, problems, warnings)
	}
	db, err = storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustCheck(t, db)
	after, err := db.Incidents().DurationsOf(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("durations before the drop %+v, after the rebuild %+v", before, after)
	}
}
