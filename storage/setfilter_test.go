package storage_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/filterexpr"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/storage"
)

// setFilterStore is a store of the filter corpus (testutil.FilterCorpus)
// and the records it holds, as the oracle reads them.
func setFilterStore(t testing.TB, n int, seed uint64) (*storage.DB, []*incidentlib.Incident) {
	t.Helper()
	db := testutil.OpenStore(t, storage.Options{})
	incs := testutil.FilterCorpus(t, n, seed)
	ctx := context.Background()
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(incs))
	for i, inc := range incs {
		ids[i] = inc.ID
	}
	stored, err := db.Incidents().FindIncidentsByIDs(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	return db, stored
}

// TestSetFilterDifferential holds the store's evaluation of random nested
// filters (every plain field, not and or to the depth bound, withdrawn
// and undated incidents) to the brute-force oracle over the records: the
// set (MatchSet, what search, stats and subscriptions read), the count,
// the pages of FindIncidents, the facets and the years, each way a set is
// read (lazymatch_test.go).
func TestSetFilterDifferential(t *testing.T) { differential(t, 400, 34, 300) }

// differential runs rounds random filters on a store of n incidents, each
// way a set is read.
func differential(t *testing.T, n int, seed uint64, rounds int) {
	db, incs := setFilterStore(t, n, seed)
	eachMembershipWay(t, func(t *testing.T) { differentialOn(t, db, incs, seed, rounds) })
}

func differentialOn(t *testing.T, db *storage.DB, incs []*incidentlib.Incident, seed uint64, rounds int) {
	oracle := testutil.NewFilterOracle(incs)
	withdrawn := 0
	for _, inc := range incs {
		if inc.State() == incidentlib.ReviewWithdrawn {
			withdrawn++
		}
	}
	if withdrawn == 0 {
		t.Fatal("the corpus has no withdrawn incident")
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 3))
	nonEmpty, withWithdrawn := 0, 0
	byID := map[string]*incidentlib.Incident{}
	for _, inc := range incs {
		byID[inc.ID] = inc
	}
	var reach lazyReach
	for i := range rounds {
		f := testutil.RandomFilter(rng, incs, filterexpr.MaxDepth)
		if err := filterexpr.Validate(&f); err != nil {
			t.Fatalf("round %d: the generator made a filter out of bounds: %v", i, err)
		}
		want := oracle.Select(f)
		bm, err := db.Incidents().MatchSet(ctx, f)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		got := make([]string, 0, bm.GetCardinality())
		for it := bm.Iterator(); it.HasNext(); {
			got = append(got, incidentlib.FormatID(it.Next()))
		}
		if !slices.Equal(got, want) {
			b, _ := json.Marshal(f)
			t.Fatalf("round %d: filter %s\nstore  %d %v\noracle %d %v", i, b, len(got), got, len(want), want)
		}
		if n, err := db.Incidents().CountIncidents(ctx, f); err != nil || n != len(want) {
			t.Fatalf("round %d: CountIncidents %d (%v), want %d", i, n, err, len(want))
		}
		reach.see(t, db, f)
		checkFacets(t, db, f, want, byID)
		checkYears(t, db, f, want, byID)
		{ // the first page, in the order of ids
			first := 100
			p, err := db.Incidents().FindIncidents(ctx, f, incidentlib.IncidentOrder{Field: incidentlib.OrderID, Direction: incidentlib.Asc}, incidentlib.PageArgs{First: &first})
			if err != nil || p.TotalCount != len(want) || !slices.Equal(p.IDs, want[:min(first, len(want))]) {
				t.Fatalf("round %d: FindIncidents %v total %d (%v), want %v", i, p.IDs, p.TotalCount, err, want[:min(first, len(want))])
			}
		}
		if len(want) > 0 {
			nonEmpty++
		}
		for _, id := range want {
			if n, _ := incidentlib.ParseID(id); incs[int(n)-1000].State() == incidentlib.ReviewWithdrawn {
				withWithdrawn++
				break
			}
		}
	}
	reach.check(t)
	// The random filters must reach both sides of the rules.
	if nonEmpty < rounds/4 || withWithdrawn == 0 {
		t.Fatalf("the random filters select too little to test: %d of %d non-empty, %d with a withdrawn incident", nonEmpty, rounds, withWithdrawn)
	}
}

// TestSetFilterRules checks the documented rules of set filters on
// filters written by hand (docs/graph.md, "Set filters").
func TestSetFilterRules(t *testing.T) {
	db, incs := setFilterStore(t, 200, 7)
	oracle := testutil.NewFilterOracle(incs)
	ctx := context.Background()
	count := func(f incidentlib.IncidentFilter) int {
		t.Helper()
		n, err := db.Incidents().CountIncidents(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	listed := count(incidentlib.IncidentFilter{})
	org := incs[0].OrgSlug
	withdrawn := []incidentlib.ReviewState{incidentlib.ReviewWithdrawn}
	inOrg := incidentlib.IncidentFilter{Organizations: []string{org}}
	cases := []struct {
		name string
		f    incidentlib.IncidentFilter
		want int
	}{
		{"EmptyOrDoesNotConstrain", incidentlib.IncidentFilter{Or: []incidentlib.IncidentFilter{}}, listed},
		{"NotOfNothingIsEverythingListed", incidentlib.IncidentFilter{Not: &incidentlib.IncidentFilter{Organizations: []string{"no-such-org"}}}, listed},
		{"NotOfEverythingIsNothing", incidentlib.IncidentFilter{Not: &incidentlib.IncidentFilter{}}, 0},
		{"NotWithdrawnRevealsNone", incidentlib.IncidentFilter{Not: &incidentlib.IncidentFilter{ReviewStates: withdrawn, Organizations: []string{org}}}, listed},
		{"NotIDsRevealsNone", incidentlib.IncidentFilter{Not: &incidentlib.IncidentFilter{IDs: []string{incs[0].ID}}}, -1},
		{"OrOfOneIsIt", incidentlib.IncidentFilter{Or: []incidentlib.IncidentFilter{inOrg}}, count(inOrg)},
		{"DoubleNotIsIt", incidentlib.IncidentFilter{Not: &incidentlib.IncidentFilter{Not: &incidentlib.IncidentFilter{ReviewStates: withdrawn}}}, count(incidentlib.IncidentFilter{ReviewStates: withdrawn})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want < 0 {
				want = len(oracle.Select(c.f))
			}
			if got := count(c.f); got != want || got != len(oracle.Select(c.f)) {
				t.Fatalf("count %d, want %d (oracle %d)", got, want, len(oracle.Select(c.f)))
			}
		})
	}
	t.Run("OneBranchAsksNotTheOther", func(t *testing.T) {
		// WITHDRAWN named in one branch lets in the withdrawn incidents of
		// that branch only.
		other := incidentlib.IncidentFilter{Organizations: []string{incs[1].OrgSlug}}
		f := incidentlib.IncidentFilter{Or: []incidentlib.IncidentFilter{{ReviewStates: withdrawn, Organizations: []string{org}}, other}}
		got, want := count(f), len(oracle.Select(f))
		mixed := count(incidentlib.IncidentFilter{ReviewStates: withdrawn, Organizations: []string{org}}) + count(other)
		if incs[1].OrgSlug == org {
			t.Skip("the corpus gave both the same organization")
		}
		if got != want || got != mixed {
			t.Fatalf("count %d, oracle %d, want %d", got, want, mixed)
		}
	})
}

// TestSetFilterInvalidAtDepth puts each invalid field, and each bound,
// at depth 2 and 3 and checks the store refuses it as INVALID naming its
// path: the checks run at every depth, not only at the top.
func TestSetFilterInvalidAtDepth(t *testing.T) {
	db := testutil.OpenStore(t, storage.Options{})
	ctx := context.Background()
	bad := "2020-13-45"
	badTime := "yesterday"
	many := make([]string, filterexpr.MaxItems+1)
	for i := range many {
		many[i] = "s"
	}
	leaves := []struct {
		field string
		leaf  incidentlib.IncidentFilter
	}{
		{"dateFrom", incidentlib.IncidentFilter{DateFrom: &bad}},
		{"dateTo", incidentlib.IncidentFilter{DateTo: &bad}},
		{"updatedSince", incidentlib.IncidentFilter{UpdatedSince: &badTime}},
		{"reviewStates.0", incidentlib.IncidentFilter{ReviewStates: []incidentlib.ReviewState{"GONE"}}},
		{"verification.0", incidentlib.IncidentFilter{Verification: []incidentlib.Verification{"RUMOUR"}}},
		{"symptoms", incidentlib.IncidentFilter{Symptoms: many}},
	}
	// wrap puts leaf at depth d below the top: or.1 at even levels, not
	// at odd ones, and returns the path it is at.
	wrap := func(leaf incidentlib.IncidentFilter, d int) (incidentlib.IncidentFilter, string) {
		f, path := leaf, ""
		for k := d; k > 0; k-- {
			if k%2 == 0 {
				f = incidentlib.IncidentFilter{Or: []incidentlib.IncidentFilter{{}, f}}
				path = ".or.1" + path
			} else {
				inner := f
				f = incidentlib.IncidentFilter{Not: &inner}
				path = ".not" + path
			}
		}
		return f, "filter" + path
	}
	for _, d := range []int{2, 3} {
		for _, l := range leaves {
			f, path := wrap(l.leaf, d)
			_, err := db.Incidents().MatchSet(ctx, f)
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID || joined(incidentlib.ErrorField(err)) != path+"."+l.field {
				t.Errorf("depth %d %s: %v (field %v), want INVALID at %s.%s", d, l.field, err, incidentlib.ErrorField(err), path, l.field)
			}
		}
	}
	// Too deep, too many nodes.
	deep, path := wrap(incidentlib.IncidentFilter{}, filterexpr.MaxDepth+1)
	if _, err := db.Incidents().CountIncidents(ctx, deep); incidentlib.ErrorCode(err) != incidentlib.EINVALID || joined(incidentlib.ErrorField(err)) != path {
		t.Errorf("depth %d: %v, want INVALID at %s", filterexpr.MaxDepth+1, err, path)
	}
	wide := incidentlib.IncidentFilter{Or: make([]incidentlib.IncidentFilter, filterexpr.MaxNodes)}
	if _, err := db.Incidents().CountIncidents(ctx, wide); incidentlib.ErrorCode(err) != incidentlib.EINVALID || joined(incidentlib.ErrorField(err)) != "filter.or.31" {
		t.Errorf("%d nodes: %v (%v), want INVALID at filter.or.31", filterexpr.MaxNodes+1, err, incidentlib.ErrorField(err))
	}
}

func joined(path []string) string {
	s := ""
	for i, p := range path {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}
