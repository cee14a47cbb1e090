package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/storage"
)

// BenchmarkSetFilterNodes measures what each filter of a set filter adds
// to counting it on a store of 10,000 generated incidents: a plain filter
// against the same with 8 and 16 more filters (or and not items, each a
// slug list and a date bound, as a client writes them), the three
// alternated in every iteration so that a busy machine slows them alike.
// It reports each one's µs and the µs per filter beyond the first, the
// figure graph.FilterNodeCost is (docs/limits.md):
//
//	go test -run '^$' -bench SetFilterNodes -benchtime 300x -count 3 ./storage/
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
	sizes := []int{1, 9, 17}
	filters := make([]incidentlib.IncidentFilter, len(sizes))
	for k, n := range sizes {
		f := node(0)
		for i := 1; i < n; i++ {
			if i%4 == 0 {
				inner := node(i)
				f.Or[len(f.Or)-1].Not = &inner
				continue
			}
			f.Or = append(f.Or, node(i))
		}
		filters[k] = f
	}
	spent := make([]time.Duration, len(sizes))
	for b.Loop() {
		for k, f := range filters {
			start := time.Now()
			if _, err := db.Incidents().CountIncidents(ctx, f); err != nil {
				b.Fatal(err)
			}
			spent[k] += time.Since(start)
		}
	}
	us := make([]float64, len(sizes))
	for k, n := range sizes {
		us[k] = float64(spent[k].Microseconds()) / float64(b.N)
		b.ReportMetric(us[k], fmt.Sprintf("µs/nodes=%d", n))
	}
	b.ReportMetric(((us[1]-us[0])/8+(us[2]-us[0])/16)/2, "µs/filter")
}
