package storage_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/storage"
)

// membershipWays are the ways a filter's set is read (lazymatch.go,
// pagepath.go), each forced, for the differential tests to hold every one
// to the brute force: the count and the walk asking each part, the set
// built first (as before the lazy sets), the set built and sorted in
// memory, and the cost models' own choice.
var membershipWays = []struct {
	name  string
	mode  int
	small int // SetSmallSet's bound; 0: the cost model's
}{
	{"Auto", storage.MembershipAuto, 0},
	{"PartsWalk", storage.MembershipParts, -1},
	{"IntersectWalk", storage.MembershipIntersect, -1},
	{"PartsMemory", storage.MembershipParts, 1 << 30},
}

// eachMembershipWay runs fn once per way, as a subtest named for it.
func eachMembershipWay(t *testing.T, fn func(t *testing.T)) {
	for _, w := range membershipWays {
		t.Run(w.name, func(t *testing.T) {
			defer storage.SetMembershipMode(w.mode)()
			if w.small != 0 {
				defer storage.SetSmallSet(w.small)()
			}
			fn(t)
		})
	}
}

// lazyReach counts the filters whose sets reach the lazy paths: two parts
// or more (a count by AndCardinality, a walk asking each), and unlisted
// incidents taken out as the set is read.
type lazyReach struct{ multi, minus int }

func (r *lazyReach) see(t *testing.T, db *storage.DB, f incidentlib.IncidentFilter) {
	t.Helper()
	parts, minus, err := storage.MatchShape(db, f)
	if err != nil {
		t.Fatal(err)
	}
	if parts >= 2 {
		r.multi++
	}
	if minus {
		r.minus++
	}
}

// check fails t when the filters missed a path.
func (r *lazyReach) check(t *testing.T) {
	t.Helper()
	if r.multi == 0 || r.minus == 0 {
		t.Fatalf("the random filters miss a lazy path: %d with several parts, %d taking out unlisted incidents", r.multi, r.minus)
	}
}

// checkFacets holds the symptom facet of f to the brute force over want,
// the ids f selects, whose records byID holds.
func checkFacets(t *testing.T, db *storage.DB, f incidentlib.IncidentFilter, want []string, byID map[string]*incidentlib.Incident) {
	t.Helper()
	facets, err := db.Incidents().Facets(context.Background(), f, []incidentlib.TermKind{incidentlib.KindSymptom})
	if err != nil {
		t.Fatal(err)
	}
	brute := map[string]int{}
	for _, id := range want {
		for _, s := range byID[id].Symptoms {
			brute[s]++
		}
	}
	if d := testutil.FacetDiff(facets[0].Counts, brute); d != "" {
		t.Fatal(d)
	}
}

// checkYears holds the years of f to the brute force over want.
func checkYears(t *testing.T, db *storage.DB, f incidentlib.IncidentFilter, want []string, byID map[string]*incidentlib.Incident) {
	t.Helper()
	years, err := db.Incidents().Years(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	brute := map[int]int{}
	for _, id := range want {
		if d := byID[id].Date; len(d) >= 4 {
			y, _ := strconv.Atoi(d[:4])
			brute[y]++
		}
	}
	for _, y := range years {
		if brute[y.Year] != y.Count {
			t.Fatalf("year %d: %d, brute force %d", y.Year, y.Count, brute[y.Year])
		}
		delete(brute, y.Year)
	}
	if len(brute) > 0 {
		t.Fatalf("years missing %v", brute)
	}
}
