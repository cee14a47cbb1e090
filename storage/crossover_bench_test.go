package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/incidentlib/incidentlib"
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
		orgs := map[string]int{}
		db, _, _ := streamedStore(b, n, func(inc *incidentlib.Incident) { orgs[inc.OrgSlug]++ }) // periods_bench_test.go
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
