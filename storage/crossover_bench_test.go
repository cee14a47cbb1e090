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

// BenchmarkPageCrossover: the first page (20, date descending) of filters
// of several sizes, sorted in memory from the sort keys (memory) and
// found by a walk of the order index (walk), to place the crossover
// (query.go's smallSet):
//
//	go test -run '^$' -bench PageCrossover -benchtime 100x ./storage/
func BenchmarkPageCrossover(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10_000, 100_000} {
		path := filepath.Join(b.TempDir(), "bench.db")
		opts := storage.Options{Taxonomy: seeds.MustTaxonomy(), NoSync: true}
		db, err := storage.Open(path, opts)
		if err != nil {
			b.Fatal(err)
		}
		bi := db.Incidents().NewBatchedImport(n, storage.BatchedImportOptions{KeepUpdatedAt: true})
		var batch []*incidentlib.Incident
		orgs := map[string]int{}
		err = gen.Stream(gen.Options{Count: n, Seed: 1, Taxonomy: opts.Taxonomy}, func(inc *incidentlib.Incident) error {
			orgs[inc.OrgSlug]++
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
		// Organizations with about 50, 300, 1,000 and 3,000 incidents.
		for _, want := range []int{50, 300, 1000, 3000} {
			slug, best := "", 0
			for s, c := range orgs {
				if slug == "" || abs(c-want) < abs(best-want) {
					slug, best = s, c
				}
			}
			f := incidentlib.IncidentFilter{Organizations: []string{slug}}
			for _, how := range []string{"memory", "walk"} {
				b.Run(fmt.Sprintf("%d/set-%d/%s", n, best, how), func(b *testing.B) {
					small := 1 << 30
					if how == "walk" {
						small = -1
					}
					defer storage.SetSmallSet(small)()
					first := 20
					for b.Loop() {
						if _, err := db.Incidents().FindIncidents(ctx, f, incidentlib.DefaultOrder, incidentlib.PageArgs{First: &first}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
		db.Close()
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
