package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// BenchmarkEditWrite: an edit of an incident's text (its terms, dates and
// links unchanged), one transaction each, on a store of 10,000 incidents
// with fsync off: the write path's own CPU and allocations, which every
// cluster member pays for every write. docs/performance.md, "One store's
// group commit, and an edit's index entries":
//
//	go test -run '^$' -bench EditWrite -benchmem -count 6 ./storage/
func BenchmarkEditWrite(b *testing.B) {
	ctx := context.Background()
	const n = 10_000
	db, _, _ := streamedStore(b, n, nil)
	incs, err := db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0001", "IL-0002", "IL-0003", "IL-0004", "IL-0005", "IL-0006", "IL-0007", "IL-0008"})
	if err != nil || len(incs) != 8 {
		b.Fatalf("the incidents to edit: %v (%d)", err, len(incs))
	}
	ectx := incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: "bench", Role: incidentlib.RoleEditor})
	i := 0
	for b.Loop() {
		inc := *incs[i%len(incs)]
		inc.UpdatedAt, inc.Version, inc.ReviewState, inc.CreatedAt = "", 0, "", ""
		inc.Review = incidentlib.Review{}
		inc.Title.En = fmt.Sprintf("edit %d", i)
		if _, err := db.Incidents().UpsertIncident(ectx, &inc, incidentlib.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
