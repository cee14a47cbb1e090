package storage_test

import (
	"context"
	"slices"
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
	checkFacetsOf(t, db.Incidents(), f, want, byID)
	checkInSnapshot(t, db, f, want, byID)
}

// countsReader is a store or one of its snapshots.
type countsReader interface {
	Facets(ctx context.Context, filter incidentlib.IncidentFilter, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error)
	Years(ctx context.Context, filter incidentlib.IncidentFilter) ([]incidentlib.YearCount, error)
}

// checkInSnapshot reads f's first page (in the order of ids), its
// facets and its years through one snapshot, as FastReads reads a
// connection: one evaluation of f serves them all (matchmemo.go), the
// snapshot keeping it, and each is held to the brute force over want
// (in id order). Then the same through a snapshot that evaluates each
// read on its own.
func checkInSnapshot(t *testing.T, db *storage.DB, f incidentlib.IncidentFilter, want []string, byID map[string]*incidentlib.Incident) {
	t.Helper()
	ctx := context.Background()
	for _, keep := range []bool{true, false} {
		restore := storage.SetSnapshotSets(keep)
		s := db.Incidents().ReadSnapshot(ctx)
		first := 20
		// Another filter first, whose evaluation the snapshot keeps too:
		// f must not be taken for it.
		other := incidentlib.IncidentFilter{Organizations: []string{"no-such-org"}}
		if len(f.Organizations) > 0 {
			other = incidentlib.IncidentFilter{}
		}
		if _, err := s.FindIncidents(ctx, other, incidentlib.DefaultOrder, incidentlib.PageArgs{First: &first}); err != nil {
			s.Release()
			t.Fatal(err)
		}
		p, err := s.FindIncidents(ctx, f, incidentlib.IncidentOrder{Field: incidentlib.OrderID, Direction: incidentlib.Asc}, incidentlib.PageArgs{First: &first})
		if err != nil || p.TotalCount != len(want) || !slices.Equal(p.IDs, want[:min(first, len(want))]) {
			s.Release()
			t.Fatalf("in a snapshot (kept %v): page %v total %d (%v), want %v of %d", keep, p.IDs, p.TotalCount, err, want[:min(first, len(want))], len(want))
		}
		checkFacetsOf(t, s, f, want, byID)
		checkYearsOf(t, s, f, want, byID)
		if n := storage.SnapshotSets(s); keep && n != 2 {
			s.Release()
			t.Fatalf("the snapshot keeps %d evaluations of two filters, want 2", n)
		}
		s.Release()
		restore()
	}
}

// checkFacetsOf holds the symptom facet of f read from r to the brute
// force over want.
func checkFacetsOf(t *testing.T, r countsReader, f incidentlib.IncidentFilter, want []string, byID map[string]*incidentlib.Incident) {
	t.Helper()
	facets, err := r.Facets(context.Background(), f, []incidentlib.TermKind{incidentlib.KindSymptom})
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
	checkYearsOf(t, db.Incidents(), f, want, byID)
}

// checkYearsOf holds the years of f read from r to the brute force over
// want.
func checkYearsOf(t *testing.T, r countsReader, f incidentlib.IncidentFilter, want []string, byID map[string]*incidentlib.Incident) {
	t.Helper()
	years, err := r.Years(context.Background(), f)
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
