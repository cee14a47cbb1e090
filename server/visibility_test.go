package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// incidentFields lists, from the schema, every field that returns
// incidents, as "Type.field(arg,...)" with its argument names sorted: a
// field whose type is Incident, an abstract type Incident belongs to
// (Node), or a wrapper of incidents (a connection, an edge, a payload, a
// change: an object type that is not itself a Node or a root and has such
// a field). The wrappers' own fields are not listed: the field that
// returns the wrapper is.
func incidentFields(s *ast.Schema) []string {
	const inc = "Incident"
	roots := map[string]bool{}
	for _, r := range []*ast.Definition{s.Query, s.Mutation, s.Subscription} {
		if r != nil {
			roots[r.Name] = true
		}
	}
	carries := map[string]bool{inc: true}
	for _, d := range s.Types {
		if (d.Kind == ast.Interface || d.Kind == ast.Union) && slices.ContainsFunc(s.GetPossibleTypes(d), func(p *ast.Definition) bool { return p.Name == inc }) {
			carries[d.Name] = true
		}
	}
	wrapper := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for name, d := range s.Types {
			if d.Kind != ast.Object || name == inc || roots[name] || wrapper[name] || slices.Contains(d.Interfaces, "Node") || strings.HasPrefix(name, "__") {
				continue
			}
			for _, f := range d.Fields {
				if carries[f.Type.Name()] || wrapper[f.Type.Name()] {
					wrapper[name], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for name, d := range s.Types {
		if d.Kind != ast.Object || wrapper[name] || strings.HasPrefix(name, "__") {
			continue
		}
		for _, f := range d.Fields {
			if !carries[f.Type.Name()] && !wrapper[f.Type.Name()] {
				continue
			}
			args := make([]string, len(f.Arguments))
			for i, a := range f.Arguments {
				args[i] = a.Name
			}
			sort.Strings(args)
			out = append(out, name+"."+f.Name+"("+strings.Join(args, ",")+")")
		}
	}
	sort.Strings(out)
	return out
}

// visibilityCase is how the test reaches one incident-returning field:
// a query whose answer holds the withdrawn incident w unless the field
// applies the visibility rule (or, for a field read by id, must hold it).
// Placeholders: $W the withdrawn incident, $C a listed one the query must
// find beside it, $A the incident both link to, $D one whose recurrenceOf
// is w, $ORG and $TERM the organization and a term all of them carry.
type visibilityCase struct {
	// mode: "listed" (w left out, c present), "byID" (w present), or
	// "elsewhere" (tested by the named test below, or the field's
	// answer is the incident the mutation wrote, named by id).
	mode  string
	query string
	// asked, for a field with a filter: the query naming WITHDRAWN in
	// reviewStates, which must find w.
	asked string
	// counted, for a connection: a query of its totalCount and nodes,
	// whose count must be the nodes' (w left out of both).
	counted string
	why     string
}

// visibilityCases lists every incident-returning field of the schema, with
// its arguments (TestVisibilityEveryField fails for a field missing here or
// here but not in the schema).
var visibilityCases = map[string]visibilityCase{
	"Query.incidents(after,before,filter,first,last,orderBy)": {mode: "listed",
		query:   `{ incidents(first: 100) { nodes { id } edges { node { id } } } }`,
		counted: `{ incidents(first: 100) { totalCount nodes { id } } }`,
		asked:   `{ incidents(first: 100, filter: {reviewStates: [WITHDRAWN]}) { nodes { id } } }`},
	"Query.search(after,filter,first,lang,query)": {mode: "listed",
		query:   `{ search(query: "zeppelin") { nodes { id } edges { node { id } } } }`,
		counted: `{ search(query: "zeppelin") { totalCount nodes { id } } }`,
		asked:   `{ search(query: "zeppelin", filter: {reviewStates: [WITHDRAWN]}) { nodes { id } } }`},
	"Organization.incidents(after,before,filter,first,last,orderBy)": {mode: "listed",
		query:   `{ organization(slug: "$ORG") { incidents(first: 100) { nodes { id } edges { node { id } } } } }`,
		counted: `{ organization(slug: "$ORG") { incidentCount incidents(first: 100) { totalCount nodes { id } } } }`,
		asked:   `{ organization(slug: "$ORG") { incidents(first: 100, filter: {reviewStates: [WITHDRAWN]}) { nodes { id } } } }`},
	"TaxonomyTerm.incidents(after,before,filter,first,last,orderBy)": {mode: "listed",
		query:   `{ term(kind: DOMAIN, slug: "$TERM") { incidents(first: 100) { nodes { id } edges { node { id } } } } }`,
		counted: `{ term(kind: DOMAIN, slug: "$TERM") { incidentCount incidents(first: 100) { totalCount nodes { id } } } }`,
		asked:   `{ term(kind: DOMAIN, slug: "$TERM") { incidents(first: 100, filter: {reviewStates: [WITHDRAWN]}) { nodes { id } } } }`},
	"Incident.related()":      {mode: "listed", query: `{ incident(id: "$A") { related { id } } }`},
	"Incident.recurrences()":  {mode: "listed", query: `{ incident(id: "$A") { recurrences { id } } }`},
	"Incident.relatedBy()":    {mode: "listed", query: `{ incident(id: "$A") { relatedBy { id } } }`},
	"Incident.similar(first)": {mode: "listed", query: `{ incident(id: "$A") { similar(first: 5) { incident { id } } } }`},
	"Incident.recurrenceOf()": {mode: "byID", query: `{ incident(id: "$D") { recurrenceOf { id } } }`,
		why: "one link the record names by id (recurrenceOfId), read as incident(id:) reads"},
	"Query.incident(id)": {mode: "byID", query: `{ incident(id: "$W") { id reviewState } }`},
	"Query.node(id)":     {mode: "byID", query: `{ node(id: "$W") { ... on Incident { id } } }`},
	"Query.nodes(ids)":   {mode: "byID", query: `{ nodes(ids: ["$W", "$C"]) { ... on Incident { id } } }`},
	"Subscription.incidentChanged(filter,since)": {mode: "elsewhere",
		why: "the withdrawal's event (incident by id) and matchesFilter: the subscriptions in TestVisibilityEveryField"},
	"Mutation.withdrawIncident(expectedVersion,id,reason)": {mode: "elsewhere",
		why: "the payload is the incident written, by id: the withdrawal in TestVisibilityEveryField"},
	"Mutation.upsertIncident(input)":                                                 {mode: "elsewhere", why: "the payload is the incident written, by id"},
	"Mutation.restoreIncident(comment,expectedVersion,id,version)":                   {mode: "elsewhere", why: "the payload is the incident written, by id"},
	"Mutation.reviewIncident(comment,decision,expectedUpdatedAt,expectedVersion,id)": {mode: "elsewhere", why: "the payload is the incident written, by id"},
	"Mutation.submitForReview(expectedVersion,id)":                                   {mode: "elsewhere", why: "the payload is the incident written, by id"},
}

// visibilityStore is a small generated library in which a, c, w and d are
// made so that w appears in every incident-returning field unless the
// field leaves withdrawn incidents out: c and w are alike (same
// organization, terms and title word), both recurrences of a, both in
// a's related and naming a in theirs; d is a recurrence of w; incs[5]
// (withdrawn after the fields are walked) is incs[4]'s one recurrence.
func visibilityStore(t *testing.T) (incs []*incidentlib.Incident, a, c, w, d *incidentlib.Incident) {
	t.Helper()
	incs = corpus(t, 40, 30)
	a, c, w, d = incs[0], incs[1], incs[2], incs[3]
	for _, x := range []*incidentlib.Incident{a, c, w} {
		x.Org, x.OrgSlug = "A Zeppelin", "a-zeppelin"
		x.Domain, x.Symptoms, x.Components = a.Domain, a.Symptoms, a.Components
		x.RootCause, x.Contributing = a.RootCause, a.Contributing
	}
	c.Title.En = "Zeppelin mooring mast failure"
	w.Title.En = "Zeppelin mooring mast failure again"
	a.Related = []string{c.ID, w.ID}
	c.Related, w.Related = []string{a.ID}, []string{a.ID}
	c.RecurrenceOf, w.RecurrenceOf = a.ID, a.ID
	d.RecurrenceOf = w.ID
	incs[5].RecurrenceOf = incs[4].ID // withdrawn later
	// Organizations ordered by their incidents: w is the latest incident,
	// and b-org's three listed incidents tie a-zeppelin's three with w.
	a.Date, c.Date, w.Date = "2001-01-01", "2001-01-02", "2026-11-30"
	for _, x := range incs[6:9] {
		x.Org, x.OrgSlug = "B Org", "b-org"
	}
	return incs, a, c, w, d
}

// TestVisibilityEveryField: every schema field that returns incidents,
// drawn from the schema, through the real handler with both executors
// (graph.FastReads and gqlgen's) over a real store, leaves out a withdrawn
// incident that would otherwise be in its answer unless the filter names
// WITHDRAWN, or shows it where the field reads by id; and so do the
// exports, and a subscription's matchesFilter. It fails for a field the
// table does not list.
func TestVisibilityEveryField(t *testing.T) {
	incs, a, c, w, d := visibilityStore(t)
	db := testutil.ServerStore(t, incs, storage.Options{})
	// Search translates through the glossary as serve's does: similar
	// then also ranks by the glossary's words (search.SimilarByWords).
	gloss, err := seeds.GlossaryReader()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := search.Open(context.Background(), db.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{Glossary: gloss})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	var fast, generic *httptest.Server
	for _, g := range []bool{false, true} {
		hs, srv := testutil.ServerTest(t, db, server.Config{ResponseCacheBytes: -1, GenericExecutor: g}, testutil.ServerParts{Search: idx})
		t.Cleanup(srv.StopSubscriptions)
		if g {
			generic = hs
		} else {
			fast = hs
		}
	}
	executors := map[string]*httptest.Server{"fast": fast, "generic": generic}
	expand := strings.NewReplacer("$W", w.ID, "$C", c.ID, "$A", a.ID, "$D", d.ID, "$ORG", "a-zeppelin", "$TERM", a.Domain[0]).Replace

	// Subscriptions started before the withdrawal: without a filter
	// (every change, matchesFilter whether lists show it), with one w
	// matched, and with one naming WITHDRAWN.
	subs := []struct {
		name    string
		filter  map[string]any
		matches bool
	}{
		{"NoFilter", nil, false},
		{"Organization", map[string]any{"organizations": []string{"a-zeppelin"}}, false},
		{"AskedWithdrawn", map[string]any{"reviewStates": []string{"WITHDRAWN"}}, true},
	}
	streams := make([]*testutil.SSEStream, len(subs))
	for i, s := range subs {
		vars := map[string]any{}
		if s.filter != nil {
			vars["f"] = s.filter
		}
		streams[i] = testutil.MustSSE(t, fast.URL, vars)
		defer streams[i].Close()
	}

	// The withdrawal, through the handler: its payload shows w (by id).
	tok, _, err := db.Tokens().CreateToken(context.Background(), "editor", incidentlib.RoleEditor, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"query": `mutation($id: ID!) { withdrawIncident(id: $id, reason: "a duplicate") { incident { id reviewState } userErrors { code } } }`,
		"variables": map[string]any{"id": w.ID}})
	req, _ := http.NewRequest(http.MethodPost, fast.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	if _, b := testutil.RoundTrip(t, req); !bytes.Contains(b, []byte(`"incident":{"id":"`+w.ID+`","reviewState":"WITHDRAWN"}`)) {
		t.Fatalf("withdrawIncident: %s", b)
	}
	for i, s := range subs {
		t.Run("Subscription/"+s.name, func(t *testing.T) {
			ev, code := streams[i].Event(t)
			if code != "" || ev.ID != w.ID || ev.Action != "WITHDRAW" || ev.Incident == nil || ev.Incident.ID != w.ID || ev.MatchesFilter != s.matches {
				t.Errorf("event %+v %s, want the withdrawal of %s with its incident, matchesFilter %v", ev, code, w.ID, s.matches)
			}
		})
	}

	s := graph.NewExecutableSchema(graph.Config{}).Schema()
	fields := incidentFields(s)
	for _, f := range fields {
		if _, ok := visibilityCases[f]; !ok {
			t.Errorf("%s returns incidents: list it in visibilityCases (with a query holding a withdrawn incident it must leave out, or why not)", f)
		}
	}
	for f := range visibilityCases {
		if !slices.Contains(fields, f) {
			t.Errorf("visibilityCases lists %s, which the schema does not have (with these arguments)", f)
		}
	}
	for _, f := range fields {
		vc, ok := visibilityCases[f]
		if !ok || vc.mode == "elsewhere" {
			continue
		}
		for name, hs := range executors {
			t.Run(f+"/"+name, func(t *testing.T) {
				q := expand(vc.query)
				got := visibleIDs(t, hs, q)
				switch vc.mode {
				case "listed":
					if slices.Contains(got, w.ID) || !slices.Contains(got, c.ID) {
						t.Errorf("ids %v: want %s and not the withdrawn %s\n%s", got, c.ID, w.ID, q)
					}
				case "byID":
					if !slices.Contains(got, w.ID) {
						t.Errorf("ids %v: want the withdrawn %s, read by id\n%s", got, w.ID, q)
					}
				default:
					t.Fatalf("mode %q", vc.mode)
				}
				if vc.counted != "" {
					q := expand(vc.counted)
					b := postRaw(t, hs.URL, q, nil, "")
					ids := visibleIDs(t, hs, q)
					ms := countPattern.FindAllSubmatch(b, -1)
					if len(ms) == 0 {
						t.Errorf("no count in %s\n%s", b, q)
					}
					for _, m := range ms {
						if n, _ := strconv.Atoi(string(m[2])); n != len(ids) {
							t.Errorf("%s %d, want %d (the nodes %v)\n%s", m[1], n, len(ids), ids, q)
						}
					}
				}
				if vc.asked != "" {
					if got := visibleIDs(t, hs, expand(vc.asked)); !slices.Contains(got, w.ID) {
						t.Errorf("asked for WITHDRAWN: ids %v, want %s\n%s", got, w.ID, expand(vc.asked))
					}
				}
			})
		}
	}

	// A filter on links counts listed incidents only: e's one recurrence
	// is x, withdrawn, so e has no recurrences a list (or its recurrences
	// field) shows.
	e, x := incs[4], incs[5]
	if _, err := db.Incidents().WithdrawIncident(context.Background(), x.ID, "a duplicate", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, hs := range executors {
		t.Run("Filter/hasRecurrences/"+name, func(t *testing.T) {
			if got := visibleIDs(t, hs, `{ incidents(first: 100, filter: {hasRecurrences: true}) { nodes { id } } }`); slices.Contains(got, e.ID) || !slices.Contains(got, a.ID) {
				t.Errorf("hasRecurrences: true: ids %v, want %s and not %s (its one recurrence is withdrawn)", got, a.ID, e.ID)
			}
			if got := visibleIDs(t, hs, `{ incidents(first: 100, filter: {hasRecurrences: false}) { nodes { id } } }`); !slices.Contains(got, e.ID) {
				t.Errorf("hasRecurrences: false: ids %v, want %s", got, e.ID)
			}
		})
	}

	// Organizations ordered by their incidents order by the listed ones,
	// as incidentCount counts them.
	for name, hs := range executors {
		t.Run("OrganizationOrder/"+name, func(t *testing.T) {
			var r struct {
				Data struct {
					ByCount, ByLatest struct {
						Nodes []struct {
							Slug          string
							IncidentCount int
						}
					}
					Latest struct {
						Nodes []struct{ Organization struct{ Slug string } }
					}
				}
			}
			b := postRaw(t, hs.URL, `{ byCount: organizations(first: 100, orderBy: {field: INCIDENT_COUNT}) { nodes { slug incidentCount } }
				byLatest: organizations(first: 1, orderBy: {field: LATEST_INCIDENT}) { nodes { slug incidentCount } }
				latest: incidents(first: 1, orderBy: {field: DATE, direction: DESC}) { nodes { organization { slug } } } }`, nil, "")
			if err := json.Unmarshal(b[len("200 "):], &r); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			ns := r.Data.ByCount.Nodes
			for i := 1; i < len(ns); i++ {
				if ns[i].IncidentCount > ns[i-1].IncidentCount {
					t.Fatalf("INCIDENT_COUNT: %s (%d) after %s (%d)", ns[i].Slug, ns[i].IncidentCount, ns[i-1].Slug, ns[i-1].IncidentCount)
				}
			}
			if l := r.Data.Latest.Nodes; len(l) != 1 || len(r.Data.ByLatest.Nodes) != 1 || r.Data.ByLatest.Nodes[0].Slug != l[0].Organization.Slug {
				t.Errorf("LATEST_INCIDENT first %+v, want the organization of the latest listed incident %+v", r.Data.ByLatest.Nodes, l)
			}
		})
	}

	// The exports are lists too.
	for _, path := range []string{"/api/v1/incidents.csv", "/feed.atom"} {
		t.Run("Export"+path, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, fast.URL+path, nil)
			resp, b := testutil.RoundTrip(t, req)
			if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(w.ID)) || !bytes.Contains(b, []byte(c.ID)) {
				t.Errorf("%d: want %s and not the withdrawn %s\n%.300s", resp.StatusCode, c.ID, w.ID, b)
			}
			req, _ = http.NewRequest(http.MethodGet, fast.URL+path+"?reviewStates=WITHDRAWN", nil)
			if resp, b := testutil.RoundTrip(t, req); resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(w.ID)) {
				t.Errorf("reviewStates=WITHDRAWN: %d: want the withdrawn %s\n%.300s", resp.StatusCode, w.ID, b)
			}
		})
	}
}

var countPattern = regexp.MustCompile(`"(totalCount|incidentCount)":([0-9]+)`)

var incidentIDPattern = regexp.MustCompile(`"id":"(IL-[0-9]+)"`)

// visibleIDs runs q and returns the incident ids its answer holds; it
// fails on an error.
func visibleIDs(t *testing.T, hs *httptest.Server, q string) []string {
	t.Helper()
	b := postRaw(t, hs.URL, q, nil, "")
	if !bytes.HasPrefix(b, []byte("200 ")) || bytes.Contains(b, []byte(`"errors"`)) {
		t.Fatalf("%s\n%s", q, b)
	}
	var ids []string
	for _, m := range incidentIDPattern.FindAllSubmatch(b, -1) {
		ids = append(ids, string(m[1]))
	}
	return ids
}

// exportFilterValues are values of the IncidentFilter fields whose
// GraphQL type does not say what a valid one is.
var exportFilterValues = map[string]string{
	"dateFrom": "2020-01-01", "dateTo": "2020-12-31", "updatedSince": "2020-01-01T00:00:00Z",
}

// TestExportsTakeEveryFilterField: every field of the schema's
// IncidentFilter is a parameter of both exports (so that reviewStates, and
// the next field, can ask for what lists leave out by default); not and
// or, filters themselves, in the JSON form filter= (each path is held to
// the oracle by TestFilterFieldsEveryPath).
func TestExportsTakeEveryFilterField(t *testing.T) {
	incs, _, _, w, _ := visibilityStore(t)
	db := testutil.ServerStore(t, incs, storage.Options{})
	hs, _ := testutil.ServerTest(t, db, server.Config{ResponseCacheBytes: -1}, testutil.ServerParts{})
	s := graph.NewExecutableSchema(graph.Config{}).Schema()
	for _, f := range s.Types["IncidentFilter"].Fields {
		v, ok := exportFilterValues[f.Name]
		param := f.Name
		switch named := s.Types[f.Type.Name()]; {
		case ok:
		case named.Kind == ast.InputObject:
			param, v = "filter", `{"`+f.Name+`": {"ids": ["`+w.ID+`"]}}`
			if f.Type.Elem != nil {
				v = `{"` + f.Name + `": [{"ids": ["` + w.ID + `"]}]}`
			}
		case named.Kind == ast.Enum:
			v = named.EnumValues[0].Name
		case f.Type.Name() == "Boolean":
			v = "true"
		case f.Type.Name() == "ID":
			v = w.ID
		case f.Type.Elem != nil && f.Type.Name() == "String":
			v = "some-slug"
		default:
			t.Errorf("IncidentFilter.%s: add a valid value to exportFilterValues", f.Name)
			continue
		}
		for _, path := range []string{"/api/v1/incidents.csv", "/feed.atom"} {
			t.Run(f.Name+path, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, hs.URL+path+"?"+url.Values{param: {v}}.Encode(), nil)
				if resp, b := testutil.RoundTrip(t, req); resp.StatusCode != http.StatusOK {
					t.Errorf("%s=%s: %d %.300s", param, v, resp.StatusCode, b)
				}
			})
		}
	}
}
