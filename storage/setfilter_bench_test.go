package storage_test

import (
	"context"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/storage"
)

// BenchmarkSetFilterNodes measures what each filter of a set filter adds
// to counting it on a store of 10,000 generated incidents: a plain filter
// (nodes=1) against the same with or and not items (each a slug list and
// a date bound, as a client writes them), alternated in one run. The
// difference per filter is graph.FilterNodeCost (docs/limits.md):
//
//	go test -run '^$' -bench SetFilterNodes -count 5 ./storage/
func BenchmarkSetFilterNodes(b *testing.B) {
	db := testutil.OpenStore(b, storage.Options{})
	incs := testutil.Corpus(b, 10_000, 34)
	ctx := context.Background()
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		b.Fatal(err)
	}
	from := "2015-01-01"
	node := func(i int) incidentlib.IncidentFilter {
		inc := incs[i*37%len(incs)]
		return incidentlib.IncidentFilter{Symptoms: inc.Symptoms, DateFrom: &from}
	}
	filters := map[string]incidentlib.IncidentFilter{"nodes=1": node(0)}
	for _, n := range []int{9, 17} {
		f := node(0)
		for i := 1; i < n; i++ {
			if i%4 == 0 {
				inner := node(i)
				f.Or[len(f.Or)-1].Not = &inner
				continue
			}
			f.Or = append(f.Or, node(i))
		}
		filters[map[int]string{9: "nodes=9", 17: "nodes=17"}[n]] = f
	}
	for _, name := range []string{"nodes=1", "nodes=9", "nodes=17"} {
		f := filters[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := db.Incidents().CountIncidents(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
