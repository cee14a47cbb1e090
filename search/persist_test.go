package search

import (
	"context"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
)

// TestReopenAfterUpdates saves an index holding replaced and deleted
// incidents, with few of them (left out as the file is written) and with
// many (compacted first), and finds the same after reopening.
func TestReopenAfterUpdates(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		changed int
	}{{"FewChanged", 2}, {"ManyChanged", 150}} {
		t.Run(tc.name, func(t *testing.T) {
			incs, err := gen.Generate(gen.Options{Count: 300, Seed: 11, Taxonomy: seeds.MustTaxonomy()})
			if err != nil {
				t.Fatal(err)
			}
			db := searchStore(t, incs)
			x, err := Open(ctx, db.Incidents(), indexPath(db), Options{BatchSize: 64})
			if err != nil {
				t.Fatal(err)
			}
			var changed []*incidentlib.Incident
			for i := 0; i < tc.changed; i++ {
				in := *incs[i]
				in.Title = incidentlib.Text{En: "Zanzibar quorum lost " + in.ID}
				changed = append(changed, &in)
			}
			if _, err := db.Incidents().ImportIncidents(ctx, changed, incidentlib.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Incidents().DeleteIncident(ctx, incs[len(incs)-1].ID, incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			before := ids(t, x, "zanzibar")
			if err := x.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			if rep, err := Check(ctx, db.Incidents(), indexPath(db), Options{}); err != nil || len(rep.Problems) > 0 || rep.Pending > 0 {
				t.Fatalf("check after close: %+v, %v", rep, err)
			}
			x = mustOpen(t, db)
			after := ids(t, x, "zanzibar")
			if !sameSet(before, after) || len(after) != min(tc.changed, incidentlib.MaxPageSize) {
				t.Errorf("after reopening found %d, before %d", len(after), len(before))
			}
			p := run(t, x, "zanzibar")
			if p.TotalCount != tc.changed {
				t.Errorf("totalCount %d, want %d", p.TotalCount, tc.changed)
			}
			// The old titles are gone, the deleted incident too.
			old := incs[0].Title.En
			for _, id := range ids(t, x, `"`+old+`"`) {
				if id == incs[0].ID {
					t.Errorf("the old title of %s still finds it", id)
				}
			}
			if n, _ := x.DocCount(); n != uint64(len(incs)-1) {
				t.Errorf("%d incidents indexed, want %d", n, len(incs)-1)
			}
			if got := ids(t, x, "zanzibar", withFilter(incidentlib.IncidentFilter{IDs: []string{incs[len(incs)-1].ID}})); len(got) != 0 {
				t.Errorf("the deleted incident is found: %v", got)
			}
			if slices.Contains(ids(t, x, "quorum"), incs[len(incs)-1].ID) {
				t.Errorf("the deleted incident is found")
			}
		})
	}
}
