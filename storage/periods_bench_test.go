package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// BenchmarkDateFilterPage: the first page (20, date descending) of date
// and updatedSince filters, answered from the period postings and, on the
// same store without them (a store from before them, opened read-only),
// from the order indexes as before. docs/performance.md, "Filtered pages
// (issue 32)":
//
//	go test -run '^$' -bench DateFilterPage -benchtime 200x ./storage/
func BenchmarkDateFilterPage(b *testing.B) {
	ctx := context.Background()
	filters := []struct {
		name string
		f    incidentlib.IncidentFilter
	}{
		{"every-dated", incidentlib.IncidentFilter{DateFrom: ptr("1990-01-01"), DateTo: ptr("2026-06-30")}},
		{"2010-03-15..2019-10-20", incidentlib.IncidentFilter{DateFrom: ptr("2010-03-15"), DateTo: ptr("2019-10-20")}},
		{"range+symptom", incidentlib.IncidentFilter{DateFrom: ptr("2010-03-15"), DateTo: ptr("2019-10-20"), Symptoms: []string{"high-latency"}}},
		{"updatedSince", incidentlib.IncidentFilter{UpdatedSince: ptr("2025-06-01T12:00:00Z")}},
	}
	for _, n := range []int{10_000, 100_000} {
		db, path, opts := streamedStore(b, n, nil)
		run := func(how string, db *storage.DB) {
			for _, fc := range filters {
				b.Run(fmt.Sprintf("%d/%s/%s", n, fc.name, how), func(b *testing.B) {
					first := 20
					for b.Loop() {
						if _, err := db.Incidents().FindIncidents(ctx, fc.f, incidentlib.DefaultOrder, incidentlib.PageArgs{First: &first}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
		run("periods", db)
		if err := storage.DropPeriodIndex(db); err != nil {
			b.Fatal(err)
		}
		db.Close()
		opts.ReadOnly = true
		db, err := storage.Open(path, opts)
		if err != nil {
			b.Fatal(err)
		}
		run("order-walk", db)
		db.Close()
	}
}

// streamedStore is a store of the n incidents of the generator (seed 1),
// streamed in transactions of 5,000; each, when set, sees every record.
func streamedStore(b *testing.B, n int, each func(*incidentlib.Incident)) (*storage.DB, string, storage.Options) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "bench.db")
	opts := storage.Options{Taxonomy: seeds.MustTaxonomy(), NoSync: true}
	db, err := storage.Open(path, opts)
	if err != nil {
		b.Fatal(err)
	}
	bi := db.Incidents().NewBatchedImport(n, storage.BatchedImportOptions{KeepUpdatedAt: true})
	var batch []*incidentlib.Incident
	err = gen.Stream(gen.Options{Count: n, Seed: 1, Taxonomy: opts.Taxonomy}, func(inc *incidentlib.Incident) error {
		if each != nil {
			each(inc)
		}
		batch = append(batch, inc)
		if len(batch) == 5000 {
			_, err := bi.Write(ctx, batch, false)
			batch = batch[:0]
			return err
		}
		return nil
	})
	if err == nil {
		_, err = bi.Write(ctx, batch, true)
	}
	if err != nil {
		b.Fatal(err)
	}
	return db, path, opts
}
