package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// testServer is the real handler over a real store in a temp dir.
type testServer struct{ *testutil.Served }

func newTestServer(tb testing.TB, incs []*incidentlib.Incident) *testServer {
	tb.Helper()
	return &testServer{testutil.ServeIncidents(tb, incs)}
}

// serveStore serves the whole handler over db (internal/testutil), ready.
func serveStore(tb testing.TB, db *storage.DB, cfg server.Config, parts testutil.ServerParts) *testServer {
	tb.Helper()
	return &testServer{testutil.ServeStore(tb, db, cfg, parts)}
}

func seedIncidents(tb testing.TB) []*incidentlib.Incident { return testutil.SeedIncidents(tb) }

func corpus(tb testing.TB, n int, seed int64) []*incidentlib.Incident {
	return testutil.Corpus(tb, n, seed)
}

type gqlError = testutil.GQLError

// gqlResponse is a GraphQL response with its status and headers.
type gqlResponse struct {
	testutil.GQLResult
	status int
	header http.Header
}

func (r *gqlResponse) code() string { return r.Code() }

// query posts a GraphQL request and decodes the response.
func (ts *testServer) query(tb testing.TB, q string, vars map[string]any, headers ...string) *gqlResponse {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("response is not JSON (%d): %s", resp.StatusCode, raw)
	}
	out.status, out.header = resp.StatusCode, resp.Header
	return &out
}

// data runs a query that must succeed and decodes its data into v.
func (ts *testServer) data(tb testing.TB, q string, vars map[string]any, v any, headers ...string) {
	tb.Helper()
	r := ts.query(tb, q, vars, headers...)
	if len(r.Errors) > 0 {
		tb.Fatalf("query failed: %+v", r.Errors)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		tb.Fatal(err)
	}
}

func TestSeedRecordFieldForField(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	raw, err := seeds.File("incidents/000-roblox-consul.json")
	if err != nil {
		t.Fatal(err)
	}
	var seed incidentlib.Incident
	if err := json.Unmarshal(raw, &seed); err != nil {
		t.Fatal(err)
	}
	const q = `query($lang: Lang) { incident(id: "IL-0213") {
		id org orgSlug date dateKind updatedAt url languages
		title(lang: $lang) summary(lang: $lang) lessons(lang: $lang) trigger(lang: $lang) detection(lang: $lang) symptomsText(lang: $lang)
		impact { scope users region }
		timeline { detectedAfter resolvedAfter resolvedAfterSeconds }
		remediation { text(lang: $lang) } actionItems { text(lang: $lang) }
		sources { url kind archived } docs relatedIds recurrenceOfId
		review { writtenBy reviewedAt reviewedBy }
		organization { id slug name incidentCount }
		domains { slug } symptoms { slug kind } components { slug } contributing { slug }
		rootCause { slug } severity { slug }
		related { id } recurrenceOf { id } recurrences { id }
	} }`
	type item struct{ Text string }
	type slug struct{ Slug string }
	type incident struct {
		ID, Org, OrgSlug, Date, DateKind, UpdatedAt, URL          string
		Languages                                                 []string
		Title, Summary, Lessons, Trigger, Detection, SymptomsText string
		Impact                                                    struct{ Scope, Users, Region string }
		Timeline                                                  struct {
			DetectedAfter        *string
			ResolvedAfter        string
			ResolvedAfterSeconds int
		}
		Remediation, ActionItems []item
		Sources                  []struct{ URL, Kind, Archived string }
		Docs                     []any
		RelatedIds               []string
		RecurrenceOfID           *string
		Review                   struct {
			WrittenBy              string
			ReviewedAt, ReviewedBy *string
		}
		Organization struct {
			ID, Slug, Name string
			IncidentCount  int
		}
		Domains, Components, Contributing []slug
		Symptoms                          []struct{ Slug, Kind string }
		RootCause, Severity               slug
		Related, Recurrences              []struct{ ID string }
		RecurrenceOf                      *struct{ ID string }
	}
	for _, lang := range []string{"EN", "KO"} {
		t.Run(lang, func(t *testing.T) {
			var got struct{ Incident incident }
			ts.data(t, q, map[string]any{"lang": lang}, &got)
			g := got.Incident
			l := incidentlib.Lang(lang)
			checks := map[string][2]string{
				"id": {g.ID, seed.ID}, "org": {g.Org, seed.Org}, "orgSlug": {g.OrgSlug, seed.OrgSlug},
				"date": {g.Date, seed.Date}, "dateKind": {g.DateKind, seed.DateKind}, "updatedAt": {g.UpdatedAt, seed.UpdatedAt},
				"url": {g.URL, seed.URL}, "title": {g.Title, seed.Title.In(l)}, "summary": {g.Summary, seed.Summary.In(l)},
				"lessons": {g.Lessons, seed.Lessons.In(l)}, "trigger": {g.Trigger, seed.Trigger.In(l)},
				"detection": {g.Detection, seed.Detection.In(l)}, "symptomsText": {g.SymptomsText, seed.SymptomsText.In(l)},
				"impact.scope": {g.Impact.Scope, seed.Impact.Scope}, "impact.users": {g.Impact.Users, seed.Impact.Users},
				"impact.region": {g.Impact.Region, seed.Impact.Region}, "timeline.resolvedAfter": {g.Timeline.ResolvedAfter, seed.Timeline.ResolvedAfter},
				"review.writtenBy": {g.Review.WrittenBy, seed.Review.WrittenBy}, "organization.name": {g.Organization.Name, seed.Org},
				"organization.id": {g.Organization.ID, "org:roblox"}, "rootCause": {g.RootCause.Slug, seed.RootCause},
				"severity": {g.Severity.Slug, seed.Severity},
			}
			for name, c := range checks {
				if c[0] != c[1] {
					t.Errorf("%s = %q, want %q", name, c[0], c[1])
				}
			}
			if lang == "KO" && !strings.Contains(g.Title, "클러스터") {
				t.Errorf("Korean title not served: %q", g.Title)
			}
			if g.Timeline.DetectedAfter != nil || g.Timeline.ResolvedAfterSeconds != 73*3600 {
				t.Errorf("timeline: %+v", g.Timeline)
			}
			if g.Review.ReviewedAt != nil || g.RecurrenceOfID != nil || g.RecurrenceOf != nil {
				t.Errorf("nulls must stay null: %+v %v", g.Review, g.RecurrenceOfID)
			}
			if len(g.Remediation) != len(seed.Remediation) || len(g.ActionItems) != len(seed.ActionItems) {
				t.Fatalf("items: %d %d", len(g.Remediation), len(g.ActionItems))
			}
			for i, it := range seed.Remediation {
				if g.Remediation[i].Text != it.Text.In(l) {
					t.Errorf("remediation[%d] = %q", i, g.Remediation[i].Text)
				}
			}
			for i, it := range seed.ActionItems {
				if g.ActionItems[i].Text != it.Text.In(l) {
					t.Errorf("actionItems[%d] = %q", i, g.ActionItems[i].Text)
				}
			}
			if len(g.Sources) != 1 || g.Sources[0].URL != seed.Sources[0].URL || g.Sources[0].Archived != seed.Sources[0].Archived || g.Sources[0].Kind != "blog" {
				t.Errorf("sources: %+v", g.Sources)
			}
			slugs := func(s []slug) []string {
				var out []string
				for _, x := range s {
					out = append(out, x.Slug)
				}
				return out
			}
			var symptoms []string
			for _, s := range g.Symptoms {
				symptoms = append(symptoms, s.Slug)
				if s.Kind != "SYMPTOM" {
					t.Errorf("symptom kind %q", s.Kind)
				}
			}
			for name, pair := range map[string][2][]string{
				"domains": {slugs(g.Domains), seed.Domain}, "symptoms": {symptoms, seed.Symptoms},
				"components": {slugs(g.Components), seed.Components}, "contributing": {slugs(g.Contributing), seed.Contributing},
			} {
				if strings.Join(pair[0], ",") != strings.Join(pair[1], ",") {
					t.Errorf("%s = %v, want %v", name, pair[0], pair[1])
				}
			}
			if len(g.Languages) != 2 || len(g.Docs) != 0 || len(g.RelatedIds) != 0 {
				t.Errorf("languages %v docs %v relatedIds %v", g.Languages, g.Docs, g.RelatedIds)
			}
		})
	}
}

func TestAcceptLanguage(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	var en, ko, explicit struct{ Incident struct{ Title string } }
	ts.data(t, `{ incident(id: "IL-0213") { title } }`, nil, &en)
	ts.data(t, `{ incident(id: "IL-0213") { title } }`, nil, &ko, "Accept-Language", "ko-KR,ko;q=0.9,en;q=0.5")
	ts.data(t, `{ incident(id: "IL-0213") { title(lang: EN) } }`, nil, &explicit, "Accept-Language", "ko")
	if !strings.HasPrefix(en.Incident.Title, "Roblox was down") || !strings.Contains(ko.Incident.Title, "클러스터") || explicit.Incident.Title != en.Incident.Title {
		t.Fatalf("en %q ko %q explicit %q", en.Incident.Title, ko.Incident.Title, explicit.Incident.Title)
	}
	// Fallback: a record with English only answers Korean requests in English.
	one := &incidentlib.Incident{ID: "IL-0001", Org: "Example", OrgSlug: "example", Title: incidentlib.Text{En: "English only"}}
	ts2 := newTestServer(t, []*incidentlib.Incident{one})
	var fb struct{ Incident struct{ Title string } }
	ts2.data(t, `{ incident(id: "IL-0001") { title(lang: KO) } }`, nil, &fb)
	if fb.Incident.Title != "English only" {
		t.Fatalf("fallback: %q", fb.Incident.Title)
	}
}

func TestRootFields(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	t.Run("NodeAndNodes", func(t *testing.T) {
		var got struct {
			Node  struct{ ID, Title string }
			Nodes []*struct {
				ID   string
				Slug string
				Name string
			}
		}
		ts.data(t, `{ node(id: "IL-0216") { id ... on Incident { title } }
			nodes(ids: ["org:roblox", "term:symptom:high-latency", "IL-0213", "IL-9999", "junk"]) { id ... on Organization { slug name } ... on TaxonomyTerm { slug } } }`, nil, &got)
		if got.Node.ID != "IL-0216" || got.Node.Title == "" {
			t.Fatalf("node: %+v", got.Node)
		}
		if len(got.Nodes) != 5 || got.Nodes[0].Name != "Roblox" || got.Nodes[1].Slug != "high-latency" || got.Nodes[2].ID != "IL-0213" || got.Nodes[3] != nil || got.Nodes[4] != nil {
			t.Fatalf("nodes: %+v", got.Nodes)
		}
	})
	t.Run("IncidentUnknownIsNull", func(t *testing.T) {
		r := ts.query(t, `{ incident(id: "IL-4242") { id } }`, nil)
		if len(r.Errors) > 0 || string(r.Data) != `{"incident":null}` {
			t.Fatalf("%s %+v", r.Data, r.Errors)
		}
	})
	t.Run("Organizations", func(t *testing.T) {
		var got struct {
			Organizations struct {
				TotalCount int
				Nodes      []struct {
					Slug          string
					IncidentCount int
					Incidents     struct{ TotalCount int }
				}
				PageInfo struct{ HasNextPage bool }
			}
			Organization struct{ Name string }
		}
		ts.data(t, `{ organizations(first: 10) { totalCount nodes { slug incidentCount incidents(first: 1) { totalCount } } pageInfo { hasNextPage } }
			organization(slug: "veltrix") { name } }`, nil, &got)
		o := got.Organizations
		// Every organization a seed names is listed; incidentCount counts
		// the incidents it is the AFFECTED organization of (veltrix is
		// only the vendor of three).
		orgs, affected := map[string]bool{}, map[string]int{}
		for _, inc := range seedIncidents(t) {
			affected[inc.OrgSlug]++
			for _, r := range inc.Organizations() {
				orgs[r.Slug] = true
			}
		}
		if o.TotalCount != len(orgs) || len(o.Nodes) != len(orgs) || o.PageInfo.HasNextPage || got.Organization.Name != "Veltrix" {
			t.Fatalf("%+v", got)
		}
		for _, n := range o.Nodes {
			if n.IncidentCount != n.Incidents.TotalCount || n.IncidentCount != affected[n.Slug] {
				t.Fatalf("org %s: count %d, connection %d, affected %d", n.Slug, n.IncidentCount, n.Incidents.TotalCount, affected[n.Slug])
			}
		}
	})
	t.Run("TaxonomyAndTerm", func(t *testing.T) {
		var got struct {
			Taxonomy []struct {
				Slug, Label   string
				IncidentCount int
			}
			Term struct {
				ID, Label     string
				IncidentCount int
				Incidents     struct{ Nodes []struct{ ID string } }
			}
		}
		ts.data(t, `{ taxonomy(kind: SEVERITY) { slug label incidentCount }
			term(kind: SYMPTOM, slug: "high-latency") { id label(lang: KO) incidentCount incidents { nodes { id } } } }`, nil, &got)
		if len(got.Taxonomy) < 2 || got.Term.ID != "term:symptom:high-latency" || got.Term.IncidentCount != len(got.Term.Incidents.Nodes) || got.Term.IncidentCount == 0 {
			t.Fatalf("%+v", got)
		}
		total := 0
		for _, s := range got.Taxonomy {
			total += s.IncidentCount
		}
		if total != len(seedIncidents(t)) {
			t.Fatalf("every seed has one severity; counts add to %d", total)
		}
	})
	t.Run("IncidentsFacetsYears", func(t *testing.T) {
		var got struct {
			Incidents struct {
				TotalCount int
				Edges      []struct {
					Cursor string
					Node   struct{ ID string }
				}
				Facets facetList // stats_test.go
				Years  []struct{ Year, Count int }
			}
		}
		ts.data(t, `{ incidents(filter: {organizations: ["unnamed-veltrix-customer", "roblox"]}, orderBy: {field: ID, direction: ASC}) {
			totalCount edges { cursor node { id } } facets(kinds: [DOMAIN]) { kind counts { term { slug } count } } years { year count } } }`, nil, &got)
		in := got.Incidents
		if in.TotalCount != 4 || len(in.Edges) != 4 || in.Edges[0].Node.ID != "IL-0213" || in.Edges[3].Node.ID != "IL-0217" {
			t.Fatalf("%+v", in)
		}
		if len(in.Facets) != 1 || in.Facets[0].Kind != "DOMAIN" || len(in.Years) != 1 || in.Years[0].Year != 2021 || in.Years[0].Count != 1 {
			t.Fatalf("facets %+v years %+v", in.Facets, in.Years)
		}
	})
}

func TestErrorCodes(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	for name, c := range map[string]struct{ q, code string }{
		"ErrCursorMalformed": {`{ incidents(after: "!!") { totalCount } }`, incidentlib.EBADCURSOR},
		"ErrFirstOver100":    {`{ incidents(first: 101) { totalCount } }`, incidentlib.EINVALID},
		"ErrBadDate":         {`{ incidents(filter: {dateFrom: "2021-02-30"}) { totalCount } }`, incidentlib.EINVALID},
	} {
		t.Run(name, func(t *testing.T) {
			r := ts.query(t, c.q, nil)
			if r.code() != c.code {
				t.Fatalf("want %s, got %+v", c.code, r.Errors)
			}
		})
	}
	t.Run("ParseErrorIs400", func(t *testing.T) {
		r := ts.query(t, `{ incidents(`, nil, "Accept", "application/graphql-response+json")
		if r.status != http.StatusBadRequest || len(r.Errors) == 0 {
			t.Fatalf("status %d errors %+v", r.status, r.Errors)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/graphql-response+json") {
			t.Fatalf("content type %q", ct)
		}
	})
}

func TestPaginationOverGraphQL(t *testing.T) {
	incs := corpus(t, 400, 3)
	ts := newTestServer(t, incs)
	const q = `query($first: Int, $after: String, $last: Int, $before: String) {
		incidents(first: $first, after: $after, last: $last, before: $before) {
			totalCount nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
	type page struct {
		Incidents struct {
			TotalCount int
			Nodes      []struct{ ID string }
			PageInfo   struct {
				HasNextPage, HasPreviousPage bool
				StartCursor, EndCursor       string
			}
		}
	}
	for _, backward := range []bool{false, true} {
		seen := map[string]int{}
		var order []string
		vars := map[string]any{"first": 30}
		if backward {
			vars = map[string]any{"last": 30}
		}
		for i := 0; ; i++ {
			var p page
			ts.data(t, q, vars, &p)
			if p.Incidents.TotalCount != len(incs) {
				t.Fatalf("totalCount %d", p.Incidents.TotalCount)
			}
			for _, n := range p.Incidents.Nodes {
				seen[n.ID]++
				order = append(order, n.ID)
			}
			pi := p.Incidents.PageInfo
			if backward {
				if !pi.HasPreviousPage {
					break
				}
				vars = map[string]any{"last": 30, "before": pi.StartCursor}
			} else {
				if !pi.HasNextPage {
					break
				}
				vars = map[string]any{"first": 30, "after": pi.EndCursor}
			}
			if i > 100 {
				t.Fatal("no end")
			}
		}
		if len(seen) != len(incs) || len(order) != len(incs) {
			t.Fatalf("backward=%v: visited %d distinct of %d in %d steps", backward, len(seen), len(incs), len(order))
		}
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	get := func(path string) (int, string) {
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if c, _ := get("/healthz"); c != 200 {
		t.Fatalf("healthz %d", c)
	}
	if c, _ := get("/readyz"); c != 200 {
		t.Fatalf("readyz %d", c)
	}
	ts.Srv.SetReady(false)
	if c, _ := get("/readyz"); c != 503 {
		t.Fatalf("readyz while not ready %d", c)
	}
	ts.Srv.SetReady(true)
	ts.data(t, `query ListPage { incidents { nodes { id related { id } } } }`, nil, &struct{}{})
	c, body := get("/metrics")
	if c != 200 {
		t.Fatalf("metrics %d", c)
	}
	for _, want := range []string{
		`incidentlib_graphql_request_duration_seconds_count{operation="ListPage"} 1`,
		"incidentlib_bbolt_read_tx_total", "incidentlib_bbolt_free_pages", "incidentlib_bbolt_pending_pages",
		"incidentlib_bbolt_freelist_bytes", "incidentlib_bbolt_file_bytes", "incidentlib_bbolt_write_commit_seconds",
		`incidentlib_dataloader_batches_total{loader="incident"}`, `incidentlib_dataloader_keys_total{loader="organization"} 0`,
		`incidentlib_dataloader_batches_total{loader="recurrences"} 0`, `incidentlib_dataloader_batches_total{loader="count"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if c, body := get("/"); c != 200 || !strings.Contains(strings.ToLower(body), "graphiql") {
		t.Fatalf("playground %d", c)
	}
}

// listPageQuery is the list page of the relations issue.
const listPageQuery = testutil.ListPageQuery
