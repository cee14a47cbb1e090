package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

func TestReindexAndCheckSearchIndex(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "il.db")
	write := func(incs ...*incidentlib.Incident) {
		t.Helper()
		db, err := storage.Open(dbPath, storage.Options{Taxonomy: seeds.MustTaxonomy()})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			t.Fatal(err)
		}
	}
	incs, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	write(incs...)

	t.Run("NoIndexIsNoProblem", func(t *testing.T) {
		out, _, err := runCmd(t, nil, "", "check", "--db", dbPath)
		if err != nil || !strings.Contains(out, "search index: none") || !strings.Contains(out, "check: ok") {
			t.Errorf("check: %v\n%s", err, out)
		}
	})
	t.Run("Reindex", func(t *testing.T) {
		out, stderr, err := runCmd(t, nil, "", "reindex", "--db", dbPath)
		if err != nil || !strings.Contains(out, "reindexed ") {
			t.Fatalf("reindex: %v\n%s%s", err, out, stderr)
		}
		out, _, err = runCmd(t, nil, "", "check", "--db", dbPath)
		if err != nil || !strings.Contains(out, "search index: ok") {
			t.Errorf("check: %v\n%s", err, out)
		}
	})
	t.Run("BehindIsPendingNotAFailure", func(t *testing.T) {
		write(&incidentlib.Incident{ID: "IL-9001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "Written while the index was away"}})
		out, _, err := runCmd(t, nil, "", "check", "--db", dbPath)
		if err != nil || !strings.Contains(out, "search index: pending catch-up: 1 changes") || !strings.Contains(out, "check: ok") {
			t.Errorf("check: %v\n%s", err, out)
		}
	})
	t.Run("IndexOfAnotherStoreFails", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.db")
		db, err := storage.Open(other, storage.Options{Taxonomy: seeds.MustTaxonomy()})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		out, _, err := runCmd(t, nil, "", "check", "--db", other, "--search-index", dbPath+".search")
		var ec exitCode
		if !errors.As(err, &ec) || ec != 1 || !strings.Contains(out, "another store") {
			t.Errorf("check: %v\n%s", err, out)
		}
	})
	t.Run("SearchOff", func(t *testing.T) {
		out, _, err := runCmd(t, nil, "", "check", "--db", dbPath, "--search-index", "off")
		if err != nil || strings.Contains(out, "search index") {
			t.Errorf("check: %v\n%s", err, out)
		}
	})
}
