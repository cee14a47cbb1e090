package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// statsFilter is a random filter, as GraphQL variables and as a predicate.
type statsFilter struct {
	vars  map[string]any
	match func(*incidentlib.Incident) bool
}

func randomStatsFilter(rng *rand.Rand, incs []*incidentlib.Incident) statsFilter {
	tax := seeds.MustTaxonomy()
	vars := map[string]any{}
	var preds []func(*incidentlib.Incident) bool
	lists := []struct {
		name string
		kind incidentlib.TermKind
		of   func(*incidentlib.Incident) []string
	}{
		{"domains", incidentlib.KindDomain, func(i *incidentlib.Incident) []string { return i.Domain }},
		{"symptoms", incidentlib.KindSymptom, func(i *incidentlib.Incident) []string { return i.Symptoms }},
		{"components", incidentlib.KindComponent, func(i *incidentlib.Incident) []string { return i.Components }},
		{"rootCauses", incidentlib.KindRootCause, func(i *incidentlib.Incident) []string { return []string{i.RootCause} }},
		{"severities", incidentlib.KindSeverity, func(i *incidentlib.Incident) []string { return []string{i.Severity} }},
	}
	// One constraint most of the time, sometimes none or two.
	for _, k := range rng.Perm(8)[:[]int{0, 1, 1, 1, 2}[rng.IntN(5)]] {
		switch {
		case k < len(lists):
			l := lists[k]
			terms := tax.Kind(l.kind)
			var slugs []string
			for range 1 + rng.IntN(2) {
				slugs = append(slugs, terms[rng.IntN(len(terms))].Slug)
			}
			vars[l.name] = slugs
			preds = append(preds, func(i *incidentlib.Incident) bool {
				return slices.ContainsFunc(l.of(i), func(s string) bool { return s != "" && slices.Contains(slugs, s) })
			})
		case k == 5:
			org := incs[rng.IntN(len(incs))].OrgSlug
			vars["organizations"] = []string{org}
			preds = append(preds, func(i *incidentlib.Incident) bool { return i.OrgSlug == org })
		case k == 6:
			from := fmt.Sprintf("%04d-%02d-01", 2010+rng.IntN(14), 1+rng.IntN(12))
			to := fmt.Sprintf("%04d-12-31", 2016+rng.IntN(10))
			vars["dateFrom"], vars["dateTo"] = from, to
			preds = append(preds, func(i *incidentlib.Incident) bool { return i.Date != "" && i.Date >= from && i.Date <= to })
		default:
			rev := rng.IntN(2) == 0
			vars["reviewed"] = rev
			preds = append(preds, func(i *incidentlib.Incident) bool { return (i.Review.ReviewedAt != "") == rev })
		}
	}
	return statsFilter{vars: vars, match: func(i *incidentlib.Incident) bool {
		for _, p := range preds {
			if !p(i) {
				return false
			}
		}
		return true
	}}
}

type durStats struct {
	Count                              int
	P50Seconds, P90Seconds, MaxSeconds *int
}

type statsAnswer struct {
	Count  int
	ByYear []struct {
		Year  int
		Term  struct{ Slug string }
		Count int
	}
	Pairs []struct {
		Row, Column struct{ Slug string }
		Count       int
	}
	TopOrganizations []struct {
		Organization struct{ Slug string }
		Count        int
	}
	Durations struct{ DetectedAfter, ResolvedAfter durStats }
}

const statsQuery = `query($f: IncidentFilter, $k: TaxonomyKind!, $r: TaxonomyKind!, $c: TaxonomyKind!) {
  stats(filter: $f) {
    count
    byYear(kind: $k) { year term { slug } count }
    pairs(rows: $r, columns: $c) { row { slug } column { slug } count }
    topOrganizations(first: 15) { organization { slug } count }
    durations {
      detectedAfter { count p50Seconds p90Seconds maxSeconds }
      resolvedAfter { count p50Seconds p90Seconds maxSeconds } } } }`

// termsOfKind are the distinct terms of kind an incident carries.
func termsOfKind(inc *incidentlib.Incident, kind incidentlib.TermKind) []string {
	var out []string
	for _, t := range inc.Terms() {
		if t.Kind == kind && !slices.Contains(out, t.Slug) {
			out = append(out, t.Slug)
		}
	}
	return out
}

// bruteDurations is the nearest-rank summary of values.
func bruteDurations(values []int) durStats {
	s := durStats{Count: len(values)}
	if len(values) == 0 {
		return s
	}
	slices.Sort(values)
	at := func(q int) *int { v := values[(q*len(values)+99)/100-1]; return &v }
	s.P50Seconds, s.P90Seconds, s.MaxSeconds = at(50), at(90), &values[len(values)-1]
	return s
}

// bruteStats counts what statsQuery asks over the incidents that match.
func bruteStats(incs []*incidentlib.Incident, match func(*incidentlib.Incident) bool, k, r, c incidentlib.TermKind) statsAnswer {
	var a statsAnswer
	type yt struct {
		year int
		slug string
	}
	years, pairs, orgs := map[yt]int{}, map[[2]string]int{}, map[string]int{}
	var det, res []int
	for _, inc := range incs {
		if !match(inc) {
			continue
		}
		a.Count++
		orgs[inc.OrgSlug]++
		if t, err := incidentlib.ParseDate(inc.Date); inc.Date != "" && err == nil {
			for _, s := range termsOfKind(inc, k) {
				years[yt{t.Year(), s}]++
			}
		}
		for _, rs := range termsOfKind(inc, r) {
			for _, cs := range termsOfKind(inc, c) {
				pairs[[2]string{rs, cs}]++
			}
		}
		for _, d := range []struct {
			s   string
			out *[]int
		}{{inc.Timeline.DetectedAfter, &det}, {inc.Timeline.ResolvedAfter, &res}} {
			if v, err := incidentlib.ParseDuration(d.s); d.s != "" && err == nil {
				*d.out = append(*d.out, int(v.Seconds()))
			}
		}
	}
	keys := slices.Collect(func(yield func(yt) bool) {
		for k := range years {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortFunc(keys, func(x, y yt) int { return cmp.Or(cmp.Compare(x.year, y.year), strings.Compare(x.slug, y.slug)) })
	for _, key := range keys {
		a.ByYear = append(a.ByYear, struct {
			Year  int
			Term  struct{ Slug string }
			Count int
		}{key.year, struct{ Slug string }{key.slug}, years[key]})
	}
	var pk [][2]string
	for p := range pairs {
		pk = append(pk, p)
	}
	slices.SortFunc(pk, func(x, y [2]string) int { return cmp.Or(strings.Compare(x[0], y[0]), strings.Compare(x[1], y[1])) })
	for _, p := range pk {
		a.Pairs = append(a.Pairs, struct {
			Row, Column struct{ Slug string }
			Count       int
		}{struct{ Slug string }{p[0]}, struct{ Slug string }{p[1]}, pairs[p]})
	}
	var ok []string
	for s := range orgs {
		ok = append(ok, s)
	}
	slices.SortFunc(ok, func(x, y string) int { return cmp.Or(cmp.Compare(orgs[y], orgs[x]), strings.Compare(x, y)) })
	for _, s := range ok[:min(15, len(ok))] {
		a.TopOrganizations = append(a.TopOrganizations, struct {
			Organization struct{ Slug string }
			Count        int
		}{struct{ Slug string }{s}, orgs[s]})
	}
	a.Durations.DetectedAfter, a.Durations.ResolvedAfter = bruteDurations(det), bruteDurations(res)
	return a
}

// TestStatsEqualBruteForce: every aggregate of stats equals a brute-force
// count over the records, for random filters, after random writes, merges
// and deletes.
func TestStatsEqualBruteForce(t *testing.T) {
	n, filters := 1500, 60
	if testing.Short() {
		n, filters = 500, 25
	}
	ts := newTestServer(t, corpus(t, n, 25))
	rng := rand.New(rand.NewPCG(25, 2))
	scramble(t, ts.DB, 60, rng)
	incs, err := ts.DB.Incidents().AllIncidents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kinds := []incidentlib.TermKind{incidentlib.KindDomain, incidentlib.KindSymptom, incidentlib.KindComponent,
		incidentlib.KindRootCause, incidentlib.KindContributing, incidentlib.KindSeverity}
	gqlKind := func(k incidentlib.TermKind) string { return strings.ToUpper(strings.ReplaceAll(string(k), "-", "_")) }
	for i := range filters {
		if i == filters/2 { // more writes, of terms and dates too: the counts follow them
			scramble(t, ts.DB, 30, rng)
			if incs, err = ts.DB.Incidents().AllIncidents(context.Background()); err != nil {
				t.Fatal(err)
			}
			for range 40 {
				c, from := *incs[rng.IntN(len(incs))], incs[rng.IntN(len(incs))]
				c.Date, c.RootCause, c.Components, c.Domain, c.Timeline = from.Date, from.RootCause, from.Components, from.Domain, from.Timeline
				c.Review.ReviewedAt, c.Review.ReviewedBy = "", ""
				if _, err := ts.DB.Incidents().UpsertIncident(context.Background(), &c, incidentlib.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if incs, err = ts.DB.Incidents().AllIncidents(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		f := randomStatsFilter(rng, incs)
		k, r, c := kinds[rng.IntN(len(kinds))], kinds[rng.IntN(len(kinds))], kinds[rng.IntN(len(kinds))]
		var got struct{ Stats statsAnswer }
		ts.data(t, statsQuery, map[string]any{"f": f.vars, "k": gqlKind(k), "r": gqlKind(r), "c": gqlKind(c)}, &got)
		want := bruteStats(incs, f.match, k, r, c)
		if len(got.Stats.ByYear) == 0 {
			got.Stats.ByYear = nil
		}
		if len(got.Stats.Pairs) == 0 {
			got.Stats.Pairs = nil
		}
		if len(got.Stats.TopOrganizations) == 0 {
			got.Stats.TopOrganizations = nil
		}
		if !reflect.DeepEqual(got.Stats, want) {
			t.Fatalf("filter %d %v (byYear %s, pairs %s x %s):\n got %+v\nwant %+v", i, f.vars, k, r, c, got.Stats, want)
		}
		// The count alone is counted without the set (graph/stats.go).
		var alone struct{ Stats struct{ Count int } }
		ts.data(t, `query($f: IncidentFilter) { stats(filter: $f) { count } }`, map[string]any{"f": f.vars}, &alone)
		if alone.Stats.Count != want.Count {
			t.Fatalf("filter %d %v: count alone %d, want %d", i, f.vars, alone.Stats.Count, want.Count)
		}
	}
}

// TestStatsCountAloneAndWithEachField: every field of IncidentStats (read
// from the schema: a new one needs its selection here) asked beside count,
// and count asked alone (counted without building the set, graph/stats.go),
// give the same count, through FastReads and gqlgen's executor alike.
func TestStatsCountAloneAndWithEachField(t *testing.T) {
	p := newFastPair(t, corpus(t, 600, 28))
	selections := map[string]string{
		"count":            "count",
		"byYear":           "byYear(kind: COMPONENT) { year count }",
		"pairs":            "pairs(rows: SEVERITY, columns: SYMPTOM) { count }",
		"topOrganizations": "topOrganizations(first: 2) { count }",
		"durations":        "durations { resolvedAfter { count } }",
	}
	def := graph.NewExecutableSchema(graph.Config{}).Schema().Types["IncidentStats"]
	filters := []string{`{}`, `{symptoms: ["high-latency"]}`, `{dateFrom: "2012-01-01", dateTo: "2020-06-30", severities: ["sev1", "sev2"]}`,
		`{reviewStates: [WITHDRAWN, REVIEWED]}`, `{or: [{symptoms: ["high-latency"]}, {not: {dateFrom: "2015-01-01"}}]}`}
	for _, fd := range def.Fields {
		sel, ok := selections[fd.Name]
		if !ok {
			t.Fatalf("IncidentStats.%s has no selection in this test: add one", fd.Name)
		}
		for _, f := range filters {
			q := fmt.Sprintf(`{ alone: stats(filter: %s) { count } with: stats(filter: %s) { count %s } typed: stats(filter: %s) { __typename n: count } }`, f, f, sel, f)
			var out struct {
				Data struct {
					Alone, With struct{ Count int }
					Typed       struct{ N int }
				}
				Errors []any
			}
			b := p.compare(t, q, nil, "") // "200 {...}"
			if err := json.Unmarshal(b[strings.IndexByte(string(b), ' ')+1:], &out); err != nil || len(out.Errors) > 0 {
				t.Fatalf("%s: %v %v", q, err, out.Errors)
			}
			if d := out.Data; d.Alone.Count != d.With.Count || d.Typed.N != d.With.Count {
				t.Fatalf("%s: count alone %d, typed %d, beside %s %d", q, d.Alone.Count, d.Typed.N, fd.Name, d.With.Count)
			}
		}
	}
}

// TestOrganizationsOrderAndPrefix: organizations in every order, filtered
// by a name prefix, paged forward and backward, equal a brute-force sort.
func TestOrganizationsOrderAndPrefix(t *testing.T) {
	ts := newTestServer(t, corpus(t, 800, 26))
	incs, err := ts.DB.Incidents().AllIncidents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type org struct {
		slug, name string
		count      int
		latest     string
	}
	orgs := map[string]*org{}
	for _, inc := range incs {
		for _, o := range inc.Organizations() {
			if orgs[o.Slug] == nil {
				orgs[o.Slug] = &org{slug: o.Slug, name: o.Name}
			}
		}
		o := orgs[inc.OrgSlug]
		o.count++
		if inc.Date > o.latest {
			o.latest = inc.Date
		}
	}
	const q = `query($first: Int, $after: String, $last: Int, $before: String, $p: String, $o: OrganizationOrder) {
	  organizations(first: $first, after: $after, last: $last, before: $before, nameStartsWith: $p, orderBy: $o) {
	    totalCount nodes { slug name incidentCount } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
	type page struct {
		Organizations struct {
			TotalCount int
			Nodes      []struct {
				Slug, Name    string
				IncidentCount int
			}
			PageInfo struct {
				HasNextPage, HasPreviousPage bool
				StartCursor, EndCursor       string
			}
		}
	}
	some := incs[0].Org
	for _, c := range []struct {
		field, dir string
		prefix     string
	}{
		{"NAME", "", ""}, {"NAME", "DESC", ""}, {"INCIDENT_COUNT", "", ""}, {"INCIDENT_COUNT", "ASC", ""},
		{"LATEST_INCIDENT", "", ""}, {"LATEST_INCIDENT", "ASC", ""}, {"", "", strings.ToUpper(some[:1])},
		{"INCIDENT_COUNT", "", strings.ToLower(some[:2])},
	} {
		var want []*org
		for _, o := range orgs {
			if strings.HasPrefix(strings.ToLower(o.name), strings.ToLower(c.prefix)) {
				want = append(want, o)
			}
		}
		desc := c.dir == "DESC" || (c.dir == "" && (c.field == "INCIDENT_COUNT" || c.field == "LATEST_INCIDENT"))
		slices.SortFunc(want, func(a, b *org) int {
			var v int
			switch c.field {
			case "NAME":
				v = strings.Compare(strings.ToLower(a.name), strings.ToLower(b.name))
			case "INCIDENT_COUNT":
				v = cmp.Compare(a.count, b.count)
			case "LATEST_INCIDENT":
				if (a.latest == "") != (b.latest == "") { // none last either way
					if a.latest == "" {
						return 1
					}
					return -1
				}
				v = strings.Compare(a.latest, b.latest)
			}
			if desc {
				v = -v
			}
			return cmp.Or(v, strings.Compare(a.slug, b.slug))
		})
		var wantSlugs []string
		for _, o := range want {
			wantSlugs = append(wantSlugs, o.slug)
		}
		vars := map[string]any{"first": 7}
		if c.field != "" {
			o := map[string]any{"field": c.field}
			if c.dir != "" {
				o["direction"] = c.dir
			}
			vars["o"] = o
		}
		if c.prefix != "" {
			vars["p"] = c.prefix
		}
		var forward []string
		for {
			var p page
			ts.data(t, q, vars, &p)
			if p.Organizations.TotalCount != len(want) {
				t.Fatalf("%+v: totalCount %d, want %d", c, p.Organizations.TotalCount, len(want))
			}
			for _, n := range p.Organizations.Nodes {
				forward = append(forward, n.Slug)
				if n.IncidentCount != orgs[n.Slug].count {
					t.Fatalf("%s: incidentCount %d, want %d", n.Slug, n.IncidentCount, orgs[n.Slug].count)
				}
			}
			if !p.Organizations.PageInfo.HasNextPage {
				break
			}
			vars["after"] = p.Organizations.PageInfo.EndCursor
		}
		if !slices.Equal(forward, wantSlugs) {
			t.Fatalf("%+v: forward\n got %v\nwant %v", c, forward, wantSlugs)
		}
		delete(vars, "after")
		delete(vars, "first")
		vars["last"] = 5
		var backward []string
		for {
			var p page
			ts.data(t, q, vars, &p)
			var ids []string
			for _, n := range p.Organizations.Nodes {
				ids = append(ids, n.Slug)
			}
			backward = append(ids, backward...)
			if !p.Organizations.PageInfo.HasPreviousPage {
				break
			}
			vars["before"] = p.Organizations.PageInfo.StartCursor
		}
		if !slices.Equal(backward, wantSlugs) {
			t.Fatalf("%+v: backward\n got %v\nwant %v", c, backward, wantSlugs)
		}
	}
	// A cursor of one order is refused by another.
	var p page
	ts.data(t, q, map[string]any{"first": 2, "o": map[string]any{"field": "NAME"}}, &p)
	r := ts.query(t, q, map[string]any{"first": 2, "after": p.Organizations.PageInfo.EndCursor, "o": map[string]any{"field": "INCIDENT_COUNT"}})
	if r.code() != "BAD_CURSOR" {
		t.Errorf("a NAME cursor with INCIDENT_COUNT: %+v", r.Errors)
	}
}

// TestStatsFastReads: FastReads answers stats with the bytes of gqlgen's
// executor, aliases, fragments and nested counts included.
func TestStatsFastReads(t *testing.T) {
	p := newFastPair(t, corpus(t, 600, 27))
	answered := executorCount(t, p.fast, "fast")
	queries := []string{
		`{ stats { count } }`,
		`{ stats(filter: {symptoms: ["high-latency"]}) { __typename count byYear(kind: COMPONENT) { __typename year term { slug label kind incidentCount } count } } }`,
		`{ s: stats(filter: {dateFrom: "2015-01-01"}) { n: count pairs(rows: ROOT_CAUSE, columns: COMPONENT) { row { slug } column { label(lang: KO) } count }
		   topOrganizations(first: 3) { organization { slug name incidentCount } count }
		   durations { detectedAfter { count p50Seconds p90Seconds maxSeconds } resolvedAfter { ...D } } } }
		 fragment D on DurationStats { count p50Seconds maxSeconds __typename }`,
		`{ stats(filter: {organizations: ["no-such-org"]}) { count byYear(kind: DOMAIN) { year } topOrganizations { count } durations { resolvedAfter { p50Seconds } } } }`,
	}
	for _, q := range queries {
		if b := p.compare(t, q, nil, ""); strings.Contains(string(b), `"errors"`) {
			t.Fatalf("%s: %s", q, b)
		}
	}
	if n := executorCount(t, p.fast, "fast") - answered; n != float64(len(queries)) {
		t.Errorf("FastReads answered %v of %d stats queries", n, len(queries))
	}
	// A bad argument is handed to gqlgen, which reports it.
	if b := p.compare(t, `{ stats { topOrganizations(first: 0) { count } } }`, nil, ""); !strings.Contains(string(b), `"INVALID"`) {
		t.Errorf("topOrganizations(first: 0): %s", b)
	}
}

// TestSeedEvents: the typed timeline of seed IL-0213, from its own text,
// through FastReads and gqlgen alike, offsets worked out from the times.
func TestSeedEvents(t *testing.T) {
	p := newFastPair(t, seedIncidents(t))
	const q = `{ incident(id: "IL-0213") { timeline { resolvedAfter } events { at offset offsetSeconds kind text t: text(lang: KO) __typename } } }`
	raw := p.compare(t, q, nil, "")
	var out struct {
		Data struct {
			Incident struct {
				Events []struct {
					At, Offset    *string
					OffsetSeconds *int
					Kind, Text, T string
				}
			}
		}
	}
	_, body, _ := strings.Cut(string(raw), " ")
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	evs := out.Data.Incident.Events
	if len(evs) != 10 {
		t.Fatalf("%d events: %s", len(evs), raw)
	}
	str := func(s *string) string {
		if s == nil {
			return "null"
		}
		return *s
	}
	for k, want := range map[int][2]string{0: {"OTHER", "null"}, 1: {"START", "0m"}, 2: {"DETECTED", "0m"}, 6: {"OTHER", "54h"}, 9: {"RESOLVED", "75h8m"}} {
		if evs[k].Kind != want[0] || str(evs[k].Offset) != want[1] {
			t.Errorf("event %d: %s at offset %s, want %s at %s", k, evs[k].Kind, str(evs[k].Offset), want[0], want[1])
		}
	}
	if evs[9].OffsetSeconds == nil || *evs[9].OffsetSeconds != 75*3600+8*60 || evs[9].T == evs[9].Text || evs[0].At == nil {
		t.Errorf("resolution %+v, trigger %+v", evs[9], evs[0])
	}
	_, warnings, err := p.db.DB.Maintenance().CheckAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "IL-0213") && strings.Contains(w, "10%") {
			t.Errorf("75h08m against a stated 73h is within 10%%: %s", w)
		}
	}
}

// scramble makes random writes, merges and deletes of related links.
func scramble(t *testing.T, db *storage.DB, ops int, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	for range ops {
		all, err := db.Incidents().AllIncidents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pick := func() *incidentlib.Incident { return all[rng.IntN(len(all))] }
		switch op := rng.IntN(10); {
		case op < 6: // rewrite related
			c := *pick()
			c.Related = nil
			for range rng.IntN(4) {
				if r := pick().ID; r != c.ID && !slices.Contains(c.Related, r) {
					c.Related = append(c.Related, r)
				}
			}
			c.Review.ReviewedAt, c.Review.ReviewedBy = "", ""
			if _, err := db.Incidents().UpsertIncident(ctx, &c, incidentlib.WriteOptions{}); err != nil {
				t.Fatalf("upsert %s: %v", c.ID, err)
			}
		case op < 8:
			if _, err := db.Incidents().DeleteIncident(ctx, pick().ID, incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		default: // merge one incident into another
			keep, drop := pick(), pick()
			if keep.ID == drop.ID {
				continue
			}
			c := *keep
			if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{&c}, incidentlib.ImportOptions{
				KeepUpdatedAt: true, Merges: map[string]string{drop.ID: keep.ID}}); err != nil {
				t.Fatalf("merge %s into %s: %v", drop.ID, keep.ID, err)
			}
		}
	}
}

// facetList is the answer of facets { kind counts { term { slug } count } }.
type facetList []struct {
	Kind   string
	Counts []struct {
		Term  struct{ Slug string }
		Count int
	}
}

// TestConnectionCountsEqualBruteForce: a page's totalCount, facets and
// years, answered by FastReads from one evaluation of the filter in the
// page's snapshot (storage/matchmemo.go, graph/fast_counts.go), equal a
// brute-force count over the records and gqlgen's executor's separate
// evaluations, for random filters with writes in between.
func TestConnectionCountsEqualBruteForce(t *testing.T) {
	p := newFastPair(t, corpus(t, 700, 29))
	rng := rand.New(rand.NewPCG(29, 3))
	const q = `query($f: IncidentFilter) { incidents(first: 3, filter: $f) { totalCount
	  facets(kinds: [SYMPTOM, SEVERITY]) { kind counts { term { slug } count } } years { year count } nodes { id } } }`
	type answer struct {
		Data struct {
			Incidents struct {
				TotalCount int
				Facets     facetList
				Years      []struct{ Year, Count int }
			}
		}
		Errors []any
	}
	for round := range 30 {
		if round%5 == 4 {
			scramble(t, p.db.DB, 25, rng) // writes between the reads
		}
		incs, err := p.db.DB.Incidents().AllIncidents(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f := randomStatsFilter(rng, incs)
		before := executorCount(t, p.fast, "fast")
		b := p.compare(t, q, map[string]any{"f": f.vars}, "")
		if executorCount(t, p.fast, "fast") != before+1 {
			t.Fatalf("round %d: FastReads did not answer the page with facets and years", round)
		}
		var a answer
		if err := json.Unmarshal(b[strings.IndexByte(string(b), ' ')+1:], &a); err != nil || len(a.Errors) > 0 {
			t.Fatalf("round %d: %v %v", round, err, a.Errors)
		}
		total, years, terms := 0, map[int]int{}, map[string]int{}
		for _, inc := range incs {
			if !f.match(inc) {
				continue
			}
			total++
			if len(inc.Date) >= 4 {
				y := 0
				fmt.Sscan(inc.Date[:4], &y)
				years[y]++
			}
			for _, s := range termsOfKind(inc, incidentlib.KindSymptom) {
				terms["SYMPTOM "+s]++
			}
			for _, s := range termsOfKind(inc, incidentlib.KindSeverity) {
				terms["SEVERITY "+s]++
			}
		}
		got := a.Data.Incidents
		if got.TotalCount != total {
			t.Fatalf("round %d %v: totalCount %d, brute force %d", round, f.vars, got.TotalCount, total)
		}
		for _, y := range got.Years {
			if years[y.Year] != y.Count {
				t.Fatalf("round %d %v: year %d counts %d, brute force %d", round, f.vars, y.Year, y.Count, years[y.Year])
			}
			delete(years, y.Year)
		}
		for _, fc := range got.Facets {
			for _, c := range fc.Counts {
				if k := fc.Kind + " " + c.Term.Slug; terms[k] != c.Count {
					t.Fatalf("round %d %v: %s counts %d, brute force %d", round, f.vars, k, c.Count, terms[k])
				}
				delete(terms, fc.Kind+" "+c.Term.Slug)
			}
		}
		if len(years) > 0 || len(terms) > 0 {
			t.Fatalf("round %d %v: missing years %v, terms %v", round, f.vars, years, terms)
		}
	}
}
