package testutil

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// OpenStore opens a new store in a file under tb.TempDir(), with the
// seeds' taxonomy unless opts names one, and closes it when the test
// ends.
func OpenStore(tb testing.TB, opts storage.Options) *storage.DB {
	tb.Helper()
	if opts.Taxonomy == nil {
		opts.Taxonomy = seeds.MustTaxonomy()
	}
	db, err := storage.Open(filepath.Join(tb.TempDir(), "incidentlib.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// OpenSeeded is OpenStore holding the seed incidents, imported with their
// own updated_at.
func OpenSeeded(tb testing.TB, opts storage.Options) *storage.DB {
	tb.Helper()
	db := OpenStore(tb, opts)
	incs, err := seeds.Incidents()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		tb.Fatal(err)
	}
	return db
}
