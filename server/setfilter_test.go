package server_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/filterexpr"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
)

// filterPaths serves a store of the filter corpus through every path a
// filter takes: both executors (FastReads and gqlgen's) for incidents,
// search and stats, the CSV export, and subscriptions.
type filterPaths struct {
	db            *storage.DB
	incs          []*incidentlib.Incident
	fast, generic *httptest.Server
	query         string // a search query, and everything it finds
	found         []string
}

func newFilterPaths(t *testing.T) *filterPaths {
	t.Helper()
	p := &filterPaths{incs: testutil.FilterCorpus(t, 90, 11)}
	p.db = testutil.ServerStore(t, p.incs, storage.Options{})
	idx, err := search.Open(context.Background(), p.db.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	for _, g := range []bool{false, true} {
		hs, srv := testutil.ServerTest(t, p.db, server.Config{ResponseCacheBytes: -1, GenericExecutor: g}, testutil.ServerParts{Search: idx})
		t.Cleanup(srv.StopSubscriptions)
		if g {
			p.generic = hs
		} else {
			p.fast = hs
		}
	}
	// The search query: the most frequent word of the titles, and what it
	// finds among every incident (every review state asked).
	words := map[string]int{}
	for _, inc := range p.incs {
		for _, w := range strings.Fields(strings.ToLower(inc.Title.En)) {
			if w = strings.Trim(w, ".,:;()'\""); len(w) > 4 {
				words[w]++
			}
		}
	}
	for w, n := range words {
		if p.query == "" || n > words[p.query] || n == words[p.query] && w < p.query {
			p.query = w
		}
	}
	all := map[string]any{"reviewStates": []string{"DRAFT", "IN_REVIEW", "REVIEWED", "DISPUTED", "WITHDRAWN"}}
	_, p.found = p.search(t, p.generic, all)
	if len(p.found) < 10 {
		t.Fatalf("the query %q finds %d incidents: too few to test", p.query, len(p.found))
	}
	return p
}

type idsReply struct {
	Data   map[string]json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

// post sends a query with the filter f and decodes its first field.
func (p *filterPaths) post(t *testing.T, hs *httptest.Server, q string, f any, into any) {
	t.Helper()
	vars := map[string]any{}
	if f != nil {
		vars["f"] = f
	}
	r := testutil.PostGraphQL(t, hs, map[string]any{"query": q, "variables": vars})
	var rep idsReply
	if err := json.Unmarshal(r.Body, &rep); err != nil || len(rep.Errors) > 0 {
		t.Fatalf("%s: %s (%v)", q, r.Body, err)
	}
	for _, v := range rep.Data {
		if err := json.Unmarshal(v, into); err != nil {
			t.Fatal(err)
		}
	}
}

type idConn struct {
	TotalCount int
	Nodes      []struct{ ID string }
	Years      []struct{ Count int }
	Facets     []struct{ Counts []struct{ Count int } }
}

// counted is the sum of the connection's years' counts and of its one
// facet's (severities: one per incident that has one).
func (c idConn) counted() (years, severities int) {
	for _, y := range c.Years {
		years += y.Count
	}
	for _, f := range c.Facets {
		for _, n := range f.Counts {
			severities += n.Count
		}
	}
	return years, severities
}

func (c idConn) ids() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.ID
	}
	sort.Strings(out)
	return out
}

func (p *filterPaths) incidents(t *testing.T, hs *httptest.Server, f any) idConn {
	var c idConn
	p.post(t, hs, `query($f: IncidentFilter) { incidents(filter: $f, first: 100, orderBy: {field: ID, direction: ASC}) { totalCount nodes { id } } }`, f, &c)
	return c
}

// aggregates is the connection's years and severity facet (which
// FastReads hands to gqlgen).
func (p *filterPaths) aggregates(t *testing.T, hs *httptest.Server, f any) idConn {
	var c idConn
	p.post(t, hs, `query($f: IncidentFilter) { incidents(filter: $f) { years { count } facets(kinds: [SEVERITY]) { counts { count } } } }`, f, &c)
	return c
}

func (p *filterPaths) search(t *testing.T, hs *httptest.Server, f any) (int, []string) {
	var c idConn
	p.post(t, hs, `query($f: IncidentFilter) { search(query: "`+p.query+`", filter: $f, first: 100) { totalCount nodes { id } } }`, f, &c)
	return c.TotalCount, c.ids()
}

func (p *filterPaths) stats(t *testing.T, hs *httptest.Server, f any) int {
	var s struct{ Count int }
	p.post(t, hs, `query($f: IncidentFilter) { stats(filter: $f) { count } }`, f, &s)
	return s.Count
}

// csvIDs is the ids of the CSV export of f in its JSON form (filter=).
func (p *filterPaths) csvIDs(t *testing.T, f any) []string {
	t.Helper()
	b, _ := json.Marshal(f)
	req, _ := http.NewRequest(http.MethodGet, p.fast.URL+"/api/v1/incidents.csv?"+url.Values{"filter": {string(b)}}.Encode(), nil)
	resp, body := testutil.RoundTrip(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CSV filter=%s: %d %.300s", b, resp.StatusCode, body)
	}
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("CSV: %v", err)
	}
	out := []string{}
	for _, r := range rows[1:] {
		out = append(out, r[0])
	}
	sort.Strings(out)
	return out
}

// records reads every incident of the store as it is now.
func (p *filterPaths) records(t *testing.T) []*incidentlib.Incident {
	t.Helper()
	ids := make([]string, len(p.incs))
	for i, inc := range p.incs {
		ids[i] = inc.ID
	}
	out, err := p.db.Incidents().FindIncidentsByIDs(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// check holds every path's answer for f (its JSON form; g the same
// filter as the store takes it) to the oracle over the records.
func (p *filterPaths) check(t *testing.T, f any, g incidentlib.IncidentFilter) {
	t.Helper()
	recs := p.records(t)
	want := testutil.NewFilterOracle(recs).Select(g)
	first := want[:min(100, len(want))]
	dated, severe := 0, 0
	for _, r := range recs {
		if _, ok := slices.BinarySearch(want, r.ID); ok && r.Date != "" {
			dated++
		}
		if _, ok := slices.BinarySearch(want, r.ID); ok && r.Severity != "" {
			severe++
		}
	}
	for _, name := range []string{"fast", "generic"} {
		hs := map[string]*httptest.Server{"fast": p.fast, "generic": p.generic}[name]
		fastBefore := executorCount(t, p.fast, "fast")
		c := p.incidents(t, hs, f)
		if c.TotalCount != len(want) || !slices.Equal(c.ids(), first) {
			t.Errorf("%s incidents: %d %v, want %d %v", name, c.TotalCount, c.ids(), len(want), first)
		}
		if n := p.stats(t, hs, f); n != len(want) {
			t.Errorf("%s stats: count %d, want %d", name, n, len(want))
		}
		var found []string
		for _, id := range p.found {
			if _, ok := slices.BinarySearch(want, id); ok {
				found = append(found, id)
			}
		}
		if n, ids := p.search(t, hs, f); n != len(found) || !slices.Equal(ids, found[:min(100, len(found))]) {
			t.Errorf("%s search: %d %v, want %d %v", name, n, ids, len(found), found)
		}
		if n := executorCount(t, p.fast, "fast") - fastBefore; name == "fast" && n != 3 {
			t.Errorf("FastReads answered %v of the 3 queries of incidents, stats and search: it handed the filter to gqlgen", n)
		}
		if y, s := p.aggregates(t, hs, f).counted(); y != dated || s != severe {
			t.Errorf("%s incidents: years count %d, severity facet %d, want %d and %d", name, y, s, dated, severe)
		}
	}
	if ids := p.csvIDs(t, f); !slices.Equal(ids, want) {
		t.Errorf("CSV: %v, want %v", ids, want)
	}
}

// subscription subscribes with f (g as the store takes it), writes
// incidents, and holds each event's matchesFilter to the oracle over the
// records as the write left them.
func (p *filterPaths) subscription(t *testing.T, f any, g incidentlib.IncidentFilter, writes []int) {
	t.Helper()
	s := testutil.MustSSE(t, p.fast.URL, map[string]any{"f": f})
	defer s.Close()
	ctx := context.Background()
	for k, i := range writes {
		inc := *p.records(t)[i]
		inc.Title.En += " (changed)"
		inc.UpdatedAt = ""
		inc.Review = incidentlib.Review{}
		if _, err := p.db.Incidents().UpsertIncident(ctx, &inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		recs := p.records(t)
		want := testutil.NewFilterOracle(recs).Matches(recs[i], g)
		// Each incident written matched before the write: its change is
		// delivered, matchesFilter saying whether it matches after.
		ev, code := s.Event(t)
		if code != "" || ev.ID != inc.ID || ev.MatchesFilter != want {
			t.Errorf("write %d of %s: event %+v %s, want it with matchesFilter %v", k, inc.ID, ev, code, want)
			return
		}
	}
}

// filterFieldValues gives, for each field of the served IncidentFilter, a
// value (its JSON form, from the corpus) that selects a part of the
// incidents, and its store form. TestFilterFieldsEveryPath fails for a
// field of the schema missing here.
func filterFieldValues(incs []*incidentlib.Incident) map[string]map[string]any {
	with := func(get func(*incidentlib.Incident) []string) []string {
		for _, inc := range incs {
			if vs := get(inc); len(vs) > 0 && vs[0] != "" {
				return vs[:1]
			}
		}
		return nil
	}
	org := ""
	for _, inc := range incs {
		if inc.State() != incidentlib.ReviewWithdrawn {
			org = inc.OrgSlug // a listed incident's
			break
		}
	}
	return map[string]map[string]any{
		"ids":            {"ids": []string{incs[0].ID, incs[1].ID, incs[2].ID}},
		"organizations":  {"organizations": []string{org}},
		"domains":        {"domains": with(func(i *incidentlib.Incident) []string { return i.Domain })},
		"symptoms":       {"symptoms": with(func(i *incidentlib.Incident) []string { return i.Symptoms })},
		"components":     {"components": with(func(i *incidentlib.Incident) []string { return i.Components })},
		"rootCauses":     {"rootCauses": with(func(i *incidentlib.Incident) []string { return []string{i.RootCause} })},
		"contributing":   {"contributing": with(func(i *incidentlib.Incident) []string { return i.Contributing })},
		"severities":     {"severities": with(func(i *incidentlib.Incident) []string { return []string{i.Severity} })},
		"dateFrom":       {"dateFrom": "2016-01-01"},
		"dateTo":         {"dateTo": "2015-12-31"},
		"updatedSince":   {"updatedSince": incs[len(incs)/2].UpdatedAt},
		"reviewed":       {"reviewed": true},
		"reviewStates":   {"reviewStates": []string{"WITHDRAWN", "DRAFT"}},
		"isRecurrence":   {"isRecurrence": true},
		"hasRecurrences": {"hasRecurrences": true},
		"verification":   {"verification": []string{"PRIMARY_SOURCE", "UNKNOWN"}},
		"not":            {"not": map[string]any{"organizations": []string{org}}},
		"or": {"or": []any{
			map[string]any{"reviewStates": []string{"WITHDRAWN"}, "organizations": []string{org}},
			map[string]any{"not": map[string]any{"reviewed": false}, "dateTo": "2019-12-31"},
		}},
	}
}

// TestFilterFieldsEveryPath enumerates the fields of IncidentFilter as the
// server serves them (introspection) and checks that each is honoured by
// every path a filter takes: incidents and stats and search through both
// executors, the CSV export (filter=), and a subscription's matchesFilter,
// each held to the brute-force oracle; then random nested filters through
// the same paths. A field added to the schema fails here until it is in
// filterFieldValues, in filterexpr (Fields, Decode) and the oracle.
func TestFilterFieldsEveryPath(t *testing.T) {
	p := newFilterPaths(t)
	r := testutil.PostGraphQL(t, p.fast, map[string]any{"query": `{ __type(name: "IncidentFilter") { inputFields { name } } }`})
	var intro struct {
		Data struct {
			Type struct{ InputFields []struct{ Name string } } `json:"__type"`
		}
	}
	if err := json.Unmarshal(r.Body, &intro); err != nil || len(intro.Data.Type.InputFields) == 0 {
		t.Fatalf("introspection: %s", r.Body)
	}
	values := filterFieldValues(p.incs)
	var served []string
	for _, f := range intro.Data.Type.InputFields {
		served = append(served, f.Name)
	}
	if !slices.Equal(sorted(served), sorted(filterexpr.Fields)) {
		t.Errorf("the schema's IncidentFilter has %v, filterexpr.Fields %v: keep them equal", sorted(served), sorted(filterexpr.Fields))
	}
	everything := testutil.NewFilterOracle(p.records(t)).Select(incidentlib.IncidentFilter{})
	for _, name := range served {
		t.Run(name, func(t *testing.T) {
			f, ok := values[name]
			if !ok {
				t.Fatalf("IncidentFilter.%s: give it a value in filterFieldValues", name)
			}
			b, _ := json.Marshal(f)
			g, err := filterexpr.Decode(b)
			if err != nil {
				t.Fatalf("filterexpr.Decode(%s): %v", b, err)
			}
			want := testutil.NewFilterOracle(p.records(t)).Select(g)
			if len(want) == 0 || slices.Equal(want, everything) {
				t.Fatalf("%s selects %d of %d listed incidents: pick a value that selects some but not all", b, len(want), len(everything))
			}
			p.check(t, f, g)
		})
	}
	t.Run("Random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(34, 34))
		for range 12 {
			g := testutil.RandomFilter(rng, p.incs, filterexpr.MaxDepth)
			b, _ := json.Marshal(toGraphQL(g))
			var f any
			_ = json.Unmarshal(b, &f)
			p.check(t, f, g)
		}
	})
	t.Run("Subscription", func(t *testing.T) {
		for _, name := range []string{"organizations", "reviewStates", "not", "or"} {
			f := values[name]
			b, _ := json.Marshal(f)
			g, _ := filterexpr.Decode(b)
			want := testutil.NewFilterOracle(p.records(t)).Select(g)
			var writes []int
			for i, inc := range p.incs {
				if _, ok := slices.BinarySearch(want, inc.ID); ok && len(writes) < 3 {
					writes = append(writes, i)
				}
			}
			p.subscription(t, f, g, writes)
		}
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// toGraphQL is g as GraphQL's variables write it.
func toGraphQL(g incidentlib.IncidentFilter) map[string]any {
	m := map[string]any{}
	set := func(name string, v any, given bool) {
		if given {
			m[name] = v
		}
	}
	set("ids", g.IDs, g.IDs != nil)
	set("organizations", g.Organizations, g.Organizations != nil)
	set("domains", g.Domains, g.Domains != nil)
	set("symptoms", g.Symptoms, g.Symptoms != nil)
	set("components", g.Components, g.Components != nil)
	set("rootCauses", g.RootCauses, g.RootCauses != nil)
	set("contributing", g.Contributing, g.Contributing != nil)
	set("severities", g.Severities, g.Severities != nil)
	set("dateFrom", g.DateFrom, g.DateFrom != nil)
	set("dateTo", g.DateTo, g.DateTo != nil)
	set("updatedSince", g.UpdatedSince, g.UpdatedSince != nil)
	set("reviewed", g.Reviewed, g.Reviewed != nil)
	set("reviewStates", g.ReviewStates, g.ReviewStates != nil)
	set("isRecurrence", g.IsRecurrence, g.IsRecurrence != nil)
	set("hasRecurrences", g.HasRecurrences, g.HasRecurrences != nil)
	set("verification", g.Verification, g.Verification != nil)
	if g.Not != nil {
		m["not"] = toGraphQL(*g.Not)
	}
	if g.Or != nil {
		or := make([]any, len(g.Or))
		for i := range g.Or {
			or[i] = toGraphQL(g.Or[i])
		}
		m["or"] = or
	}
	return m
}

// TestSetFilterCostAndRefusals: a set filter's cost grows by
// graph.FilterNodeCost per filter beyond the first, in every field that
// takes one; a bad field at depth 3 is INVALID naming its path through
// GraphQL and the CSV export alike; the CSV's JSON form refuses what is
// not a filter.
func TestSetFilterCostAndRefusals(t *testing.T) {
	incs := testutil.FilterCorpus(t, 20, 5)
	db := testutil.ServerStore(t, incs, storage.Options{})
	hs, srv := testutil.ServerTest(t, db, server.Config{ResponseCacheBytes: -1, Limits: gqledge.Limits{MaxCost: 5}}, testutil.ServerParts{})
	t.Cleanup(srv.StopSubscriptions)
	nested := map[string]any{"symptoms": []string{"oom"}, "or": []any{
		map[string]any{"not": map[string]any{"dateFrom": "2020-01-01"}},
		map[string]any{"severities": []string{"sev1"}}, map[string]any{}}}
	costOf := func(q string, f any) int {
		t.Helper()
		r := testutil.PostGraphQL(t, hs, map[string]any{"query": q, "variables": map[string]any{"f": f}})
		var out struct {
			Errors []struct {
				Extensions struct {
					Code string
					Cost int
				}
			}
		}
		if json.Unmarshal(r.Body, &out) != nil || len(out.Errors) == 0 || out.Errors[0].Extensions.Code != "COST_LIMIT" {
			t.Fatalf("%s: %s", q, r.Body)
		}
		return out.Errors[0].Extensions.Cost
	}
	for _, q := range []string{
		`query($f: IncidentFilter) { incidents(filter: $f) { nodes { id } } }`,
		`query($f: IncidentFilter) { search(query: "x", filter: $f) { nodes { id } } }`,
		`query($f: IncidentFilter) { stats(filter: $f) { count } }`,
		`query($f: IncidentFilter) { organization(slug: "x") { incidents(filter: $f) { nodes { id } } } }`,
	} {
		plain, set := costOf(q, map[string]any{"symptoms": []string{"oom"}}), costOf(q, nested)
		if set-plain != 4*graph.FilterNodeCost {
			t.Errorf("%s: a filter of 5 costs %d more than a plain one, want %d", q, set-plain, 4*graph.FilterNodeCost)
		}
	}

	// A bad date at depth 3.
	hs, _ = testutil.ServerTest(t, db, server.Config{ResponseCacheBytes: -1}, testutil.ServerParts{})
	bad := map[string]any{"or": []any{map[string]any{}, map[string]any{"not": map[string]any{"or": []any{map[string]any{"dateTo": "2020-02-30"}}}}}}
	const path = "filter.or.1.not.or.0.dateTo"
	for _, q := range []string{
		`query($f: IncidentFilter) { incidents(filter: $f) { totalCount } }`,
		`query($f: IncidentFilter) { stats(filter: $f) { count } }`,
	} {
		r := testutil.PostGraphQL(t, hs, map[string]any{"query": q, "variables": map[string]any{"f": bad}})
		if r.Code() != incidentlib.EINVALID || !strings.Contains(string(r.Body), path) {
			t.Errorf("%s: %s, want INVALID naming %s", q, r.Body, path)
		}
	}
	// A subscription with it is refused the same way.
	if st, code, body := testutil.OpenSSE(t, hs.URL, map[string]any{"f": bad}, nil); code == http.StatusOK {
		_, data, err := st.Next()
		st.Close()
		if err != nil || !strings.Contains(string(data), incidentlib.EINVALID) || !strings.Contains(string(data), path) {
			t.Errorf("a subscription with a bad filter at depth 3: %s %v, want INVALID naming %s", data, err, path)
		}
	} else if !strings.Contains(string(body), incidentlib.EINVALID) || !strings.Contains(string(body), path) {
		t.Errorf("a subscription with a bad filter at depth 3: %d %s, want INVALID naming %s", code, body, path)
	}
	b, _ := json.Marshal(bad)
	for name, v := range map[string]url.Values{
		"DeepBadDate":    {"filter": {string(b)}},
		"UnknownField":   {"filter": {`{"or": [{"nope": true}]}`}},
		"NotAnObject":    {"filter": {`["ids"]`}},
		"WithFlatParams": {"filter": {`{}`}, "symptoms": {"oom"}},
		"TooDeep":        {"filter": {`{"not":{"not":{"not":{"not":{"not":{}}}}}}`}},
	} {
		t.Run("CSV/"+name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/v1/incidents.csv?"+v.Encode(), nil)
			resp, body := testutil.RoundTrip(t, req)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), incidentlib.EINVALID) {
				t.Errorf("%d %s, want 400 INVALID", resp.StatusCode, body)
			}
			if name == "DeepBadDate" && !strings.Contains(string(body), path) {
				t.Errorf("%s does not name %s", body, path)
			}
		})
	}
}
