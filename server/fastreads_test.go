package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// fastPair is one store served twice: by the default handler, which answers
// read queries with graph.FastReads, and by one that sends every operation
// through gqlgen's executor. Neither caches responses.
type fastPair struct {
	db            *testServer
	fast, generic *httptest.Server
}

func newFastPair(t *testing.T, incs []*incidentlib.Incident) *fastPair {
	t.Helper()
	ts := newTestServer(t, incs)
	p := &fastPair{db: ts}
	idx, err := search.Open(context.Background(), ts.DB.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	for _, generic := range []bool{false, true} {
		// One public URL for both: citations name the library's address.
		hs, _ := testutil.ServerTest(t, ts.DB, server.Config{ResponseCacheBytes: -1, GenericExecutor: generic, PublicURL: "https://incidents.example.org"}, testutil.ServerParts{Search: idx})
		if generic {
			p.generic = hs
		} else {
			p.fast = hs
		}
	}
	return p
}

func postRaw(t *testing.T, url, query string, vars map[string]any, lang string) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if lang != "" {
		req.Header.Set("Accept-Language", lang)
	}
	resp, b := testutil.RoundTrip(t, req)
	return []byte(fmt.Sprintf("%d %s", resp.StatusCode, b))
}

// compare runs one query on both handlers and fails unless the bytes agree.
func (p *fastPair) compare(t *testing.T, query string, vars map[string]any, lang string) []byte {
	t.Helper()
	fast := postRaw(t, p.fast.URL, query, vars, lang)
	generic := postRaw(t, p.generic.URL, query, vars, lang)
	if !bytes.Equal(fast, generic) {
		t.Fatalf("responses differ for\n%s\nvariables %v, Accept-Language %q\nfast:    %s\ngeneric: %s", query, vars, lang, fast, generic)
	}
	return fast
}

func executorCount(t *testing.T, hs *httptest.Server, executor string) float64 {
	t.Helper()
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	prefix := `incidentlib_graphql_executor_operations_total{executor="` + executor + `"} `
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	t.Fatalf("no %s in /metrics", prefix)
	return 0
}

// awkward is an incident whose text needs escaping and whose every optional
// part is present, beside the generated and seed incidents.
func awkward(incs []*incidentlib.Incident) *incidentlib.Incident {
	inc := *incs[0]
	inc.ID = "IL-9990"
	// Control characters are refused in text (docs/writes.md); tab and
	// newline only in multi-line text such as the summary.
	inc.Title = incidentlib.Text{En: "Quote \" backslash \\ <b>&amp;</b> \u2028 done", Ko: "따옴표 \"와 역슬래시 \\"}
	inc.Summary = incidentlib.Text{En: "tab\tnewline\n<b>&amp;</b> \u2028", Ko: "요약만 한국어로"}
	inc.Related = []string{incs[1].ID, incs[2].ID}
	inc.RecurrenceOf = incs[3].ID
	inc.Sources = []incidentlib.Source{{URL: "https://example.com/a?b=\"c\"", Kind: "blog"}, {URL: "https://example.com/x"}}
	inc.Docs = []json.RawMessage{json.RawMessage(`{"a":"<&>","b":[1,2.5,null]}`)}
	inc.CreatedAt = "2026-01-02T03:04:05Z"
	return &inc
}

// TestFastReadsDifferential: graph.FastReads gives gqlgen's bytes, for
// hand-written queries over every field it answers and for generated ones
// with aliases, fragments, directives, variables and languages; and it
// answers them (it does not hand everything to gqlgen).
func TestFastReadsDifferential(t *testing.T) {
	incs := append(seedIncidents(t), corpus(t, 300, 7)...)
	incs = append(incs, awkward(incs))
	p := newFastPair(t, incs)

	everything := `id org orgSlug date dateKind title summary lessons trigger detection symptomsText
		titleKo: title(lang: KO) summaryEn: summary(lang: EN) languages
		impact { scope users region __typename } timeline { detectedAfter resolvedAfter detectedAfterSeconds resolvedAfterSeconds }
		remediation { text textKo: text(lang: KO) } actionItems { text }
		sources { url kind archived status checkedAt finalUrl } docs relatedIds recurrenceOfId
		review { writtenBy reviewedAt reviewedBy } updatedAt url extra __typename
		organization { id slug name incidentCount __typename }
		verification textOrigin textOriginKo: textOrigin(lang: KO)
		organizations { role organization { id slug name incidentCount } __typename }
		domains { id kind slug label labelKo: label(lang: KO) description incidentCount }
		symptoms { label } components { slug } contributing { id } rootCause { slug incidentCount } severity { label(lang: KO) }
		related { id title related { id } recurrenceOf { id } }
		recurrenceOf { id title organization { name } }
		recurrences { id recurrences { id } }`
	fixed := []struct {
		q    string
		vars map[string]any
		lang string
	}{
		{`query ListPage($first: Int) { incidents(first: $first) { nodes { id title organization { name incidentCount } symptoms { label } components { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id } } } }`, map[string]any{"first": 20}, ""},
		{`{ incidents(first: 50) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor __typename } edges { cursor node { ` + everything + ` } __typename } nodes { id } __typename } }`, nil, ""},
		{`{ incidents(first: 30, orderBy: {field: ID, direction: ASC}) { nodes { ` + everything + ` } } }`, nil, "ko-KR,ko;q=0.9"},
		{`{ incident(id: "IL-9990") { ` + everything + ` } }`, nil, ""},
		{`{ incident(id: "IL-9990") { ` + everything + ` } }`, nil, "ko"},
		{`{ incident(id: "IL-0000") { id } a: incident(id: "IL-9990") { id } }`, nil, ""},
		{`{ organization(slug: "roblox") { id slug name incidentCount } none: organization(slug: "no-such") { id } }`, nil, ""},
		{`{ taxonomy(kind: SYMPTOM) { id kind slug label description incidentCount } }`, nil, "ko"},
		{`{ term(kind: COMPONENT, slug: "storage-engine") { id label incidentCount } t: term(kind: DOMAIN, slug: "nope") { id } }`, nil, ""},
		{`query($d: Boolean!, $l: Lang) { __typename incidents(last: 5, before: "bad") { nodes { id } } }`, map[string]any{"d": true}, ""},
		{`query($after: String) { incidents(first: 3, after: $after, filter: {symptoms: ["partial-outage"], reviewed: false}) { totalCount nodes { id } } }`, map[string]any{"after": nil}, ""},
		{`query($s: Boolean!, $l: Lang) { incidents(first: 10) { nodes { id title(lang: $l) ...F related @skip(if: $s) { id } ... on Incident @include(if: $s) { org } } } } fragment F on Node { id ... on Incident { orgSlug title } }`, map[string]any{"s": true, "l": "KO"}, ""},
		{`query($s: Boolean!, $l: Lang) { incidents(first: 10) { nodes { id title(lang: $l) ...F related @skip(if: $s) { id } ... on Incident @include(if: $s) { org } } } } fragment F on Node { id ... on Incident { orgSlug title } }`, map[string]any{"s": false, "l": nil}, ""},
		{`query($q: String!, $l: Lang) { search(query: $q, lang: $l, first: 5) { totalCount pageInfo { hasNextPage endCursor } edges { cursor score highlights { field lang snippet __typename } node { id title organization { name incidentCount } related { id } } __typename } nodes { id } __typename } }`, map[string]any{"q": "outage", "l": nil}, ""},
		{`{ search(query: "커넥션 풀", first: 3) { totalCount edges { score highlights { field lang snippet } node { title } } } }`, nil, "ko"},
		{`{ search(query: "\"leader election\" -kubernetes", filter: {symptoms: ["partial-outage"]}, lang: EN) { totalCount edges { node { id } highlights { snippet } } } }`, nil, ""},
		{`{ a: search(query: "freelist") { totalCount } b: search(query: "title:consul") { edges { score } } }`, nil, ""},
		// Handed to gqlgen: the bytes must still agree.
		{`{ search(query: "\"unclosed") { totalCount } }`, nil, ""},
		{`{ search(query: "outage") { facets { kind counts { count } } years { year count } } }`, nil, ""},
		{`{ incidents(first: 5) { facets { kind counts { count term { slug } } } years { year count } nodes { similar { score incident { id } } } } }`, nil, ""},
		{`{ node(id: "IL-9990") { id __typename ... on Incident { title related { id } } } nodes(ids: ["org:roblox", "IL-0213", "term:symptom:partial-outage", "IL-0000", "bogus", "IL-9990"]) { id __typename ... on Organization { name incidentCount } ... on TaxonomyTerm { label incidentCount } ... on Incident { title organization { name } recurrenceOf { id } } } }`, nil, ""},
		{`{ n: node(id: "org:roblox") { id } t: node(id: "term:component:storage-engine") { ... on TaxonomyTerm { slug kind } } x: node(id: "nope") { id } }`, nil, ""},
		// Facets and years through FastReads, in the page's snapshot (fast_counts.go).
		{`query($f: IncidentFilter) { incidents(first: 5, filter: $f) { totalCount f: facets(kinds: [SYMPTOM, ROOT_CAUSE]) { __typename kind counts { count term { slug label incidentCount __typename } __typename } } facets { kind counts { count } } years { year count __typename } nodes { id } } }`,
			map[string]any{"f": map[string]any{"dateFrom": "2012-01-01", "symptoms": []string{"partial-outage", "high-latency"}}}, "ko"},
		{`{ a: incidents(first: 2) { years { count } } b: incidents(first: 2, filter: {reviewStates: [WITHDRAWN]}) { totalCount facets(kinds: [DOMAIN]) { counts { term { label } } } years { year } } c: incidents(filter: {organizations: ["no-such"]}) { facets { kind counts { count } } years { year } } }`, nil, ""},
		{`{ incidents(first: 500) { nodes { id } } }`, nil, ""},
		{`{ incidents(filter: {dateFrom: "2020-13-45"}) { nodes { id } } }`, nil, ""},
		{`{ __schema { queryType { name } } }`, nil, ""},
	}
	for _, c := range fixed {
		p.compare(t, c.q, c.vars, c.lang)
	}
	fastBefore := executorCount(t, p.fast, "fast")

	rng := rand.New(rand.NewPCG(1, 2))
	const generated = 300
	refused := 0 // by a limit before either executor runs, or asking a field handed to gqlgen
	handedOn := schemaFields().handedOn
	for i := 0; i < generated; i++ {
		q, vars := randomQuery(rng)
		lang := []string{"", "ko", "en-US", "ko-KR;q=0.1, en"}[rng.IntN(4)]
		before := executorCount(t, p.fast, "fast")
		b := p.compare(t, q, vars, lang)
		limited := bytes.Contains(b, []byte(`"code":"COST_LIMIT"`)) || bytes.Contains(b, []byte(`"code":"REPEAT_LIMIT"`)) || bytes.Contains(b, []byte(`"code":"DEPTH_LIMIT"`))
		handed := slices.ContainsFunc(handedOn, func(h string) bool { return strings.Contains(q, h) })
		if limited || handed {
			refused++
			if executorCount(t, p.fast, "fast") != before {
				refused-- // answered all the same (a handed-on field under a skipped selection)
			}
		}
		if bytes.Contains(b, []byte(`"errors"`)) && testing.Verbose() {
			t.Logf("%s\n%s", q, b)
		}
	}
	served := executorCount(t, p.fast, "fast") - fastBefore
	if served < float64(generated-refused)*9/10 {
		t.Errorf("FastReads answered %v of %d generated queries (%d refused by a limit or asking a field it hands on)", served, generated, refused)
	}
	if n := executorCount(t, p.generic, "fast"); n != 0 {
		t.Errorf("the generic handler answered %v queries with FastReads", n)
	}
}

// TestFastReadsSearchOutsideSnapshot: a query that reads the store and
// then searches, after a write the index has not caught up with, is
// answered by FastReads with the new incident found: the search (and its
// catch-up, which reads the change log in a transaction of its own) runs
// outside the snapshot the earlier fields read through, which storage
// refuses to nest.
func TestFastReadsSearchOutsideSnapshot(t *testing.T) {
	incs := corpus(t, 50, 9)
	p := newFastPair(t, incs)
	const q = `{ incidents(first: 2) { nodes { id organization { name } } } search(query: "zyxwvutsrq") { totalCount nodes { id organization { name } } } }`
	p.compare(t, q, nil, "") // the index is built and current
	added := *incs[0]
	added.ID = "IL-9991"
	added.Title.En = "Zyxwvutsrq, a word no other incident has"
	added.Review = incidentlib.Review{} // set by reviewing, not by an upsert
	if _, err := p.db.DB.Incidents().UpsertIncident(context.Background(), &added, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := executorCount(t, p.fast, "fast")
	b := postRaw(t, p.fast.URL, q, nil, "")
	if !bytes.Contains(b, []byte(`"totalCount":1`)) || !bytes.Contains(b, []byte(`"IL-9991"`)) {
		t.Fatalf("the search after the write: %s", b)
	}
	if got := executorCount(t, p.fast, "fast") - before; got != 1 {
		t.Fatalf("FastReads answered %v of 1 (it handed the query to gqlgen)", got)
	}
	p.compare(t, q, nil, "")
}

// TestFastReadsPlansFollowVariables: FastReads keeps the plan of a
// selection set across requests unless a variable can change it. One
// document is sent again with other variables, which reach the plans
// through nested argument values, directives on fields, inline fragments,
// fragment spreads and inside fragments, and lang arguments below the top
// level; each answer must be gqlgen's. The last document collects two
// selection sets that begin and end with the same fields and differ in the
// middle: a plan must not be taken for the other's.
func TestFastReadsPlansFollowVariables(t *testing.T) {
	incs := append(seedIncidents(t), corpus(t, 60, 3)...)
	p := newFastPair(t, incs)
	// Each selection set below reaches a variable one way only.
	const doc = `query($sym: String!, $a: Boolean!, $b: Boolean!, $l: Lang) {
		viaFragment: incidents(first: 4, filter: {symptoms: [$sym]}) { nodes { id ...G } }
		viaInline: incidents(first: 4, filter: {symptoms: [$sym]}) { nodes { id ... on Incident { orgSlug @skip(if: $a) } } }
		onSpread: incidents(first: 4, filter: {symptoms: [$sym]}) { nodes { id ...F @skip(if: $b) } }
		onInline: incidents(first: 4, filter: {symptoms: [$sym]}) { nodes { id ... on Incident @include(if: $b) { date } } }
		onField: incidents(first: 4, filter: {symptoms: [$sym]}) { nodes { id organization { name @skip(if: $b) } } }
		langBelow: incidents(first: 4, filter: {symptoms: [$sym]}) { nodes { id symptoms { label(lang: $l) } related { id summary(lang: $l) } } }
	}
	fragment F on Incident { orgSlug }
	fragment G on Incident { dateKind @include(if: $a) }`
	answers := map[string]bool{}
	for _, sym := range []string{"partial-outage", "data-loss"} {
		for _, a := range []bool{false, true} {
			for _, b := range []bool{false, true} {
				for _, l := range []any{nil, "KO"} {
					vars := map[string]any{"sym": sym, "a": a, "b": b, "l": l}
					answers[string(p.compare(t, doc, vars, ""))] = true
				}
			}
		}
	}
	if len(answers) != 16 {
		t.Fatalf("16 sets of variables gave %d different answers: the document does not test them", len(answers))
	}
	const merged = `{
		a: incidents(first: 5) { nodes { ...R related { title } ...D } }
		b: incidents(first: 5) { nodes { ...R related { summary } ...D } }
	}
	fragment R on Incident { related { id } }
	fragment D on Incident { related { date } }`
	for range 2 {
		if b := p.compare(t, merged, nil, ""); !bytes.Contains(b, []byte(`"summary"`)) || !bytes.Contains(b, []byte(`"title"`)) {
			t.Fatalf("the merged selections lost a field: %.300s", b)
		}
	}
	if n := executorCount(t, p.fast, "fast"); n < 18 {
		t.Errorf("FastReads answered %v of the 18 queries: the test compares gqlgen with itself", n)
	}
}

// randomQuery builds a query over the fields FastReads answers, drawn
// from the schema (schemaFields), with aliases, repeated fields,
// fragments, directives, variables and language arguments; now and then a
// field it hands to gqlgen.
func randomQuery(rng *rand.Rand) (string, map[string]any) {
	g := &queryGen{rng: rng, vars: map[string]any{}, fields: schemaFields()}
	var root string
	switch rng.IntN(6) {
	case 5:
		word := []string{"outage", "database", "timeout", "cache", "deploy", "network", "클러스터", "장애", "\"connection pool\"", "incident -kubernetes"}[rng.IntN(10)]
		root = fmt.Sprintf(`search(query: %q, first: %d) { totalCount pageInfo { hasNextPage } edges { score cursor highlights { field lang snippet } node { %s } } }`, word, 1+rng.IntN(20), g.incident(1))
	case 4:
		root = fmt.Sprintf(`nodes(ids: ["IL-%04d", "org:roblox", "IL-%04d", "term:symptom:partial-outage"]) { id ... on Incident { %s } ... on Organization { name } }`, 1000+rng.IntN(320), 1000+rng.IntN(320), g.incident(1))
	case 0:
		root = fmt.Sprintf(`incident(id: %q) { %s }`, fmt.Sprintf("IL-%04d", 1000+rng.IntN(320)), g.incident(2+rng.IntN(2)))
	case 1:
		root = fmt.Sprintf(`a: incidents(first: %d, orderBy: {field: %s, direction: %s}) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { %s } } }`,
			1+rng.IntN(30), []string{"DATE", "UPDATED_AT", "ID"}[rng.IntN(3)], []string{"ASC", "DESC"}[rng.IntN(2)], g.incident(1+rng.IntN(2)))
	default:
		root = fmt.Sprintf(`incidents(first: %d) { nodes { %s } }`, 1+rng.IntN(40), g.incident(1+rng.IntN(2)))
	}
	var decl []string
	for name, v := range g.vars {
		switch v.(type) {
		case bool:
			decl = append(decl, "$"+name+": Boolean!")
		default:
			decl = append(decl, "$"+name+": Lang")
		}
	}
	q := "{ " + root + " }"
	if len(decl) > 0 {
		q = "query(" + strings.Join(decl, ", ") + ") " + q
	}
	return q + g.fragments.String(), g.vars
}

type queryGen struct {
	rng       *rand.Rand
	vars      map[string]any
	fragments strings.Builder
	n         int
	aliases   int
	fields    *genFields
}

// genFields are the fields the generator draws from, read from the schema:
// the fields of Incident by what they hold, and for every other object
// type its fields that need no argument or only lang. A field with a
// required argument is left out (TestFastReadsCoversSchema reaches it).
type genFields struct {
	scalars   []string            // Incident's leaves without arguments, __typename included
	texts     []string            // Incident's leaves whose only argument is lang
	terms     []string            // Incident's TaxonomyTerm fields
	relations []string            // Incident's Incident fields
	objects   []string            // Incident's other object fields
	handedOn  []string            // Incident's fields in graph.FastReadsHandsOn, with their selection
	objectOf  map[string]string   // Incident's object field -> its type
	leaves    map[string][]string // object type -> its leaf fields, handed-on ones left out
	lang      map[string]bool     // "Type.field" whose only argument is lang
}

var schemaFields = sync.OnceValue(func() *genFields {
	s := graph.NewExecutableSchema(graph.Config{}).Schema()
	g := &genFields{objectOf: map[string]string{}, leaves: map[string][]string{}, lang: map[string]bool{}}
	handed := func(typ, field string) bool { return slices.Contains(graph.FastReadsHandsOn[typ], field) }
	for _, def := range s.Types {
		if def.Kind != ast.Object {
			continue
		}
		for _, f := range def.Fields {
			if required(f) || strings.HasPrefix(f.Name, "__") {
				continue
			}
			if len(f.Arguments) == 1 && f.Arguments[0].Name == "lang" {
				g.lang[def.Name+"."+f.Name] = true
			}
			if s.Types[f.Type.Name()].IsLeafType() && !handed(def.Name, f.Name) {
				g.leaves[def.Name] = append(g.leaves[def.Name], f.Name)
			}
		}
	}
	g.scalars = append(g.scalars, "__typename")
	for _, f := range s.Types["Incident"].Fields {
		typ := f.Type.Name()
		switch {
		case required(f) || strings.HasPrefix(f.Name, "__"):
		case graph.NestedRoles[f.Name] > incidentlib.RoleReader: // needs a token (history)
		case handed("Incident", f.Name):
			sel := f.Name
			if !s.Types[typ].IsLeafType() {
				sel += " { __typename }"
			}
			g.handedOn = append(g.handedOn, sel)
		case s.Types[typ].IsLeafType() && g.lang["Incident."+f.Name]:
			g.texts = append(g.texts, f.Name)
		case s.Types[typ].IsLeafType():
			g.scalars = append(g.scalars, f.Name)
		case typ == "TaxonomyTerm":
			g.terms = append(g.terms, f.Name)
		case typ == "Incident":
			g.relations = append(g.relations, f.Name)
		default:
			g.objects = append(g.objects, f.Name)
			g.objectOf[f.Name] = typ
		}
	}
	return g
})

// required tells whether the field has an argument that must be given.
func required(f *ast.FieldDefinition) bool {
	for _, a := range f.Arguments {
		if a.Type.NonNull && a.DefaultValue == nil {
			return true
		}
	}
	return false
}

func (g *queryGen) lang() string {
	switch g.rng.IntN(4) {
	case 0:
		return "(lang: KO)"
	case 1:
		return "(lang: EN)"
	case 2:
		g.n++
		name := fmt.Sprintf("l%d", g.n)
		g.vars[name] = []any{"KO", "EN", nil}[g.rng.IntN(3)]
		return "(lang: $" + name + ")"
	}
	return ""
}

func (g *queryGen) directive() string {
	if g.rng.IntN(6) != 0 {
		return ""
	}
	g.n++
	name := fmt.Sprintf("b%d", g.n)
	g.vars[name] = g.rng.IntN(2) == 0
	return []string{" @skip(if: $", " @include(if: $"}[g.rng.IntN(2)] + name + ")"
}

func (g *queryGen) alias(name string) string {
	if g.rng.IntN(5) == 0 && g.aliases < 20 {
		g.aliases++
		return "x" + name + ": "
	}
	return ""
}

// leaves is a selection of some of typ's leaf fields, in random order,
// with or without lang arguments, and now and then __typename.
func (g *queryGen) leaves(typ string) string {
	fields := slices.Clone(g.fields.leaves[typ])
	if g.rng.IntN(4) == 0 {
		fields = append(fields, "__typename")
	}
	g.rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	fields = fields[:1+g.rng.IntN(len(fields))]
	for i, f := range fields {
		if g.fields.lang[typ+"."+f] {
			fields[i] = g.withLang(f)
		}
	}
	return strings.Join(fields, " ")
}

// withLang gives the field a lang argument or none; one with an argument
// gets an alias of its own, as fields that share a response name must have
// the same arguments.
func (g *queryGen) withLang(name string) string {
	if g.aliases >= 20 { // within the limit of aliases
		return name
	}
	args := g.lang()
	if args == "" {
		return name
	}
	g.aliases++
	g.n++
	return fmt.Sprintf("%s%d: %s%s", name, g.n, name, args)
}

func pick(rng *rand.Rand, from []string) string { return from[rng.IntN(len(from))] }

func (g *queryGen) incident(depth int) string {
	var parts []string
	fs := g.fields
	for range 2 + g.rng.IntN(8) {
		switch k := g.rng.IntN(10); {
		case k < 3:
			f := pick(g.rng, fs.scalars)
			parts = append(parts, g.alias(f)+f+g.directive())
		case k < 5:
			f := pick(g.rng, fs.texts)
			parts = append(parts, g.withLang(f)+g.directive())
		case k < 6:
			f := pick(g.rng, fs.terms)
			parts = append(parts, g.alias(f)+f+g.directive()+" { "+g.leaves("TaxonomyTerm")+" }")
		case k < 7:
			f := pick(g.rng, fs.objects)
			parts = append(parts, g.alias(f)+f+" { "+g.leaves(fs.objectOf[f])+" }")
		case k < 9 && depth > 0:
			f := pick(g.rng, fs.relations)
			parts = append(parts, g.alias(f)+f+g.directive()+" { "+g.incident(depth-1)+" }")
		case k == 9 && g.rng.IntN(4) == 0:
			g.n++
			name := fmt.Sprintf("F%d", g.n)
			cond := []string{"Incident", "Node"}[g.rng.IntN(2)]
			inner := "id"
			if cond == "Incident" {
				inner = g.incident(depth - 1)
			}
			fmt.Fprintf(&g.fragments, " fragment %s on %s { %s }", name, cond, inner)
			parts = append(parts, "..."+name+g.directive())
		case k == 9:
			parts = append(parts, "... on Incident"+g.directive()+" { "+g.incident(depth-1)+" }")
		default:
			if g.rng.IntN(30) == 0 && len(fs.handedOn) > 0 {
				parts = append(parts, pick(g.rng, fs.handedOn)) // handed to gqlgen
			} else {
				parts = append(parts, "title")
			}
		}
	}
	return strings.Join(parts, " ")
}

// TestFastReadsListPageReads: the list page read through FastReads takes
// one read transaction (every level is read from one snapshot), whatever
// its size, and through gqlgen the same number for 100 incidents as for 20
// (TestNoNPlusOne covers 10,000 incidents without -race).
func TestFastReadsListPageReads(t *testing.T) {
	p := newFastPair(t, corpus(t, 500, 3))
	tx := func(url string, n int) int {
		before := readTxTotal(p.db.DB)
		postRaw(t, url, listPageQuery, map[string]any{"n": n}, "")
		return readTxTotal(p.db.DB) - before
	}
	answered := executorCount(t, p.fast, "fast")
	for _, n := range []int{100, 20} {
		if fast, generic := tx(p.fast.URL, n), tx(p.generic.URL, n); fast != 1 || generic < 2 {
			t.Errorf("first: %d: %d read transactions through FastReads (want 1), %d through gqlgen", n, fast, generic)
		}
	}
	if a, b := tx(p.generic.URL, 100), tx(p.generic.URL, 20); a != b {
		t.Errorf("read transactions through gqlgen: %d for first: 100, %d for first: 20", a, b)
	}
	if got := executorCount(t, p.fast, "fast") - answered; got != 2 {
		t.Errorf("FastReads answered %v of the 2 list pages", got)
	}
}

// TestResponseBuffersConcurrently: FastReads writes responses into pooled
// buffers that go back to the pool once the response is written, and so
// does the capture of the response cache. Many clients at once, each with
// other queries (list pages of other sizes, searches), must each get
// exactly the bytes of their query as answered alone by gqlgen.
func TestResponseBuffersConcurrently(t *testing.T) {
	p := newFastPair(t, corpus(t, 300, 5))
	type req struct {
		query string
		vars  map[string]any
	}
	var reqs []req
	for n := 1; n <= 12; n++ {
		reqs = append(reqs, req{listPageQuery, map[string]any{"n": n * 7}})
	}
	for _, q := range []string{"outage", "leader election", "클러스터", "keepalive"} {
		reqs = append(reqs, req{`query($q: String!) { search(query: $q, first: 10) { totalCount edges { score highlights { field snippet } node { id title } } } }`, map[string]any{"q": q}})
	}
	want := make([][]byte, len(reqs))
	for i, r := range reqs {
		want[i] = postRaw(t, p.generic.URL, r.query, r.vars, "")
	}
	before := executorCount(t, p.fast, "fast")
	const clients, rounds = 8, 20
	errs := make(chan error, clients)
	for c := range clients {
		go func() {
			for k := range rounds {
				i := (c*rounds + k) % len(reqs)
				body, _ := json.Marshal(map[string]any{"query": reqs[i].query, "variables": reqs[i].vars})
				resp, err := http.Post(p.fast.URL+"/graphql", "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if got := []byte(fmt.Sprintf("%d %s", resp.StatusCode, b)); err != nil || !bytes.Equal(got, want[i]) {
					errs <- fmt.Errorf("query %d: got %.200s\nwant %.200s (%v)", i, got, want[i], err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := executorCount(t, p.fast, "fast") - before; got != clients*rounds {
		t.Errorf("FastReads answered %v of %d queries", got, clients*rounds)
	}
}

// TestFastReadsCoversSchema: every field of every type a query reaches is
// either written by graph.FastReads or named in graph.FastReadsHandsOn. A
// query reaches each field through the schema (graph.FastReadsReach),
// over data in which it has a value; FastReads must answer it with
// gqlgen's bytes, and hand on, with the same bytes, each field it names.
// A field added to the schema without either fails here.
func TestFastReadsCoversSchema(t *testing.T) {
	incs := append(seedIncidents(t), corpus(t, 300, 7)...)
	full := awkward(incs) // every optional part present, first by date
	full.Date = "2026-11-30"
	p := newFastPair(t, append(incs, full))
	check := map[string]incidentlib.SourceCheck{full.Sources[0].URL: {Status: 200, CheckedAt: "2026-11-30T12:00:00Z", FinalURL: full.Sources[0].URL + "/moved"}}
	if _, err := p.db.DB.Incidents().RecordSourceChecks(context.Background(), []string{full.ID}, check); err != nil {
		t.Fatal(err)
	}
	checkCoverage(t, graph.NewExecutableSchema(graph.Config{}).Schema(), func(q string) (answered bool, body []byte) {
		before := executorCount(t, p.fast, "fast")
		body = p.compare(t, q, nil, "")
		return executorCount(t, p.fast, "fast") > before, body
	})
}

// checkCoverage runs, for each field FastReads must cover in s, a query
// reaching it, and reports a field that run does not find answered (or
// finds answered while handed on), or whose value is empty in the answer.
func checkCoverage(t testing.TB, s *ast.Schema, run func(query string) (answered bool, body []byte)) {
	fields, handedOn := graph.FastReadsReach(s)
	paths := schemaPaths(s)
	for _, name := range fields {
		typ, field, _ := strings.Cut(name, ".")
		path, ok := paths[typ]
		if !ok {
			t.Errorf("%s: no path from Query to %s", name, typ)
			continue
		}
		def := s.Types[typ].Fields.ForName(field)
		sel := "cover: " + field + sampleArgs(s, def, false)
		if !s.Types[def.Type.Name()].IsLeafType() {
			sel += " { __typename }"
		}
		q := "{ " + path.wrap(sel) + " }"
		answered, body := run(q)
		switch {
		case handedOn[name] && answered:
			t.Errorf("%s is in graph.FastReadsHandsOn but FastReads answered\n%s", name, q)
		case !handedOn[name] && !answered:
			t.Errorf("%s: FastReads handed the query to gqlgen: write the field in graph/fast_*.go or name it in graph.FastReadsHandsOn\n%s\n%s", name, q, body)
		case !handedOn[name] && !hasValue(body):
			t.Errorf("%s: the query reaches no value of the field, so it does not test it\n%s\n%.300s", name, q, body)
		}
	}
}

// hasValue tells whether some "cover" key of the response has a value
// other than null or an empty list.
func hasValue(body []byte) bool {
	for rest := body; ; {
		i := bytes.Index(rest, []byte(`"cover":`))
		if i < 0 {
			return false
		}
		rest = rest[i+len(`"cover":`):]
		if !bytes.HasPrefix(rest, []byte("null")) && !bytes.HasPrefix(rest, []byte("[]")) {
			return true
		}
	}
}

// schemaPath is how a query reaches objects of a type: the fields from
// Query, each with its arguments, an inline fragment where a field's type
// is an interface.
type schemaPath []string

func (p schemaPath) wrap(sel string) string {
	for i := len(p) - 1; i >= 0; i-- {
		sel = p[i] + " { " + sel + " }"
	}
	return sel
}

// schemaPaths finds, breadth first, a path to every object type from
// Query through fields FastReads does not hand on, preferring fields
// without required arguments (they reach the data of every page).
func schemaPaths(s *ast.Schema) map[string]schemaPath {
	paths := map[string]schemaPath{s.Query.Name: nil}
	for _, withRequired := range []bool{false, true} {
		queue := []string{s.Query.Name}
		seen := map[string]bool{}
		for len(queue) > 0 {
			typ := queue[0]
			queue = queue[1:]
			if seen[typ] {
				continue
			}
			seen[typ] = true
			for _, f := range s.Types[typ].Fields {
				target := s.Types[f.Type.Name()]
				if strings.HasPrefix(f.Name, "__") || target.IsLeafType() || slices.Contains(graph.FastReadsHandsOn[typ], f.Name) || (required(f) && !withRequired) {
					continue
				}
				step := append(slices.Clone(paths[typ]), f.Name+sampleArgs(s, f, true))
				reached := []*ast.Definition{target}
				if target.IsAbstractType() {
					reached = s.GetPossibleTypes(target)
				}
				for _, r := range reached {
					next := step
					if target.IsAbstractType() {
						next = append(slices.Clone(step), "... on "+r.Name)
					}
					if _, ok := paths[r.Name]; !ok {
						paths[r.Name] = next
					}
					queue = append(queue, r.Name)
				}
			}
		}
	}
	return paths
}

// sampleArgs gives the field's required arguments a value that finds data
// (and, with page, asks for a full page): an incident id that exists, a
// search every incident's text matches, the first value of an enum.
func sampleArgs(s *ast.Schema, f *ast.FieldDefinition, page bool) string {
	var args []string
	for _, a := range f.Arguments {
		var v string
		switch {
		case a.Type.NonNull && a.DefaultValue == nil:
			v = sampleValue(s, f.Name+"."+a.Name, a.Type)
		case page && a.Name == "first" && a.Type.Name() == "Int":
			v = "100"
		default:
			continue
		}
		args = append(args, a.Name+": "+v)
	}
	if len(args) == 0 {
		return ""
	}
	return "(" + strings.Join(args, ", ") + ")"
}

// sampleValue is a value of type typ for the argument named (field.arg)
// that finds data: one of the known ones, else one of its type.
func sampleValue(s *ast.Schema, name string, typ *ast.Type) string {
	if v, ok := sampleArgValues[name]; ok {
		return v
	}
	if typ.Elem != nil {
		return "[" + sampleValue(s, name, typ.Elem) + "]"
	}
	if def := s.Types[typ.Name()]; def.Kind == ast.Enum {
		return def.EnumValues[0].Name
	}
	switch typ.Name() {
	case "ID":
		return `"IL-9990"`
	case "Int":
		return "5"
	case "Boolean":
		return "true"
	}
	return `"incident"`
}

// sampleArgValues are values of required arguments that find data.
var sampleArgValues = map[string]string{
	"term.kind":         "COMPONENT",
	"term.slug":         `"storage-engine"`,
	"organization.slug": `"roblox"`,
	"search.query":      `"incident"`,
}

// readTxTotal is how many read transactions the store has begun. (The one
// line to change when the store's figures become incidentlib.StoreStats:
// db.StoreStats().ReadTxTotal.)
func readTxTotal(db *storage.DB) int { return db.Maintenance().StoreStats().ReadTxTotal }
