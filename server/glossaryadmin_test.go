package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// glossaryServer serves records written in one language each over a
// store seeded with the built-in glossary, search translating through the
// store's glossary as serve wires it, with the response cache on; it
// returns the server's address and an admin's and an editor's tokens.
func glossaryServer(t *testing.T) (db *storage.DB, hs *httptest.Server, admin, editor string) {
	t.Helper()
	builtin, err := seeds.Glossary(seeds.MustTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	db = testutil.ServerStore(t, []*incidentlib.Incident{
		oneLanguage("IL-0001", "Alpha", "좀비 프로세스 누적으로 서버 중단", "종료되지 않은 좀비 프로세스가 프로세스 테이블을 채웠다."),
		oneLanguage("IL-0002", "Beta", "Zombie processes filled the process table", "A zombie process leak stopped new workers."),
		oneLanguage("IL-0003", "Gamma", "Disk full on build agents", "Build agents ran out of disk space."),
	}, storage.Options{Glossary: builtin})
	idx, err := search.Open(context.Background(), db.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{Glossary: db.Taxonomies()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	hs, _ = testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{Search: idx})
	return db, hs, testutil.APIToken(t, db, "glossary-admin", incidentlib.RoleAdmin), testutil.APIToken(t, db, "glossary-editor", incidentlib.RoleEditor)
}

type gqlAnswer struct {
	Data   json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

func gqlAs(t *testing.T, hs *httptest.Server, token, q string, vars map[string]any, out any) (int, gqlAnswer) {
	t.Helper()
	var headers []string
	if token != "" {
		headers = []string{"Authorization", "Bearer " + token}
	}
	r := testutil.PostGraphQL(t, hs, map[string]any{"query": q, "variables": vars}, headers...)
	var a gqlAnswer
	if err := json.Unmarshal(r.Body, &a); err != nil {
		t.Fatalf("%d %s: %v", r.Status, r.Body, err)
	}
	if out != nil && len(a.Data) > 0 && string(a.Data) != "null" {
		if err := json.Unmarshal(a.Data, out); err != nil {
			t.Fatal(err, string(r.Body))
		}
	}
	return r.Status, a
}

func glossarySearch(t *testing.T, hs *httptest.Server, query string) []string {
	t.Helper()
	var out struct {
		Search struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	if _, a := gqlAs(t, hs, "", `query($q: String!) { search(query: $q) { edges { node { id } } } }`, map[string]any{"q": query}, &out); len(a.Errors) > 0 {
		t.Fatalf("search %q: %+v", query, a.Errors)
	}
	ids := []string{}
	for _, e := range out.Search.Edges {
		ids = append(ids, e.Node.ID)
	}
	return ids
}

const glossaryMutation = `mutation($i: GlossaryEntryInput!) { addGlossaryEntry(input: $i) { entry { key en ko note } userErrors { code field message } } }`

type glossaryPayload struct {
	Entry *struct {
		Key    string
		En, Ko []string
		Note   string
	}
	UserErrors []struct {
		Code    string
		Field   []string
		Message string
	}
}

// TestGlossaryAdminThroughTheAPI: an admin's new glossary entry makes a
// cross-language search that found nothing find the records of the other
// language, at once and past the response cache, and its removal undoes
// that; the glossary query shows it; an editor is refused and an invalid
// entry is refused with its field, both writing nothing; the history, in
// GraphQL and in the replicas' REST feed, shows each change and its
// author.
func TestGlossaryAdminThroughTheAPI(t *testing.T) {
	db, hs, admin, editor := glossaryServer(t)
	entry := map[string]any{"en": []string{"zombie process"}, "ko": []string{"좀비 프로세스"}, "note": "a finished process its parent has not reaped"}
	version := func() string {
		var out struct{ Glossary struct{ Version string } }
		gqlAs(t, hs, "", `{ glossary(first: 1) { version } }`, nil, &out)
		return out.Glossary.Version
	}

	if got := glossarySearch(t, hs, "zombie process"); !slices.Equal(got, []string{"IL-0002"}) {
		t.Fatalf("before the entry, English finds %v, want its own language's IL-0002 only", got)
	}
	if got := glossarySearch(t, hs, "좀비 프로세스"); !slices.Equal(got, []string{"IL-0001"}) {
		t.Fatalf("before the entry, Korean finds %v, want IL-0001 only", got)
	}
	v0 := version()

	t.Run("EditorRefused", func(t *testing.T) {
		status, a := gqlAs(t, hs, editor, glossaryMutation, map[string]any{"i": entry}, nil)
		if status != http.StatusForbidden || len(a.Errors) == 0 || a.Errors[0].Extensions.Code != incidentlib.EFORBIDDEN {
			t.Fatalf("an editor's addition: %d %+v", status, a)
		}
		if version() != v0 {
			t.Fatal("a refused addition changed the glossary")
		}
	})
	t.Run("InvalidRefused", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			input map[string]any
			field []string
		}{
			{"NoKorean", map[string]any{"en": []string{"zombie process"}, "ko": []string{}}, []string{"ko"}},
			{"HangulInEnglish", map[string]any{"en": []string{"좀비"}, "ko": []string{"좀비"}}, []string{"en", "0"}},
			{"TooManyForms", map[string]any{"en": []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}, "ko": []string{"좀비"}}, []string{"en"}},
			{"KeyTaken", map[string]any{"en": []string{"Rollout"}, "ko": []string{"출시"}}, []string{"en", "0"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var out struct{ AddGlossaryEntry glossaryPayload }
				status, a := gqlAs(t, hs, admin, glossaryMutation, map[string]any{"i": tc.input}, &out)
				p := out.AddGlossaryEntry
				if status != http.StatusOK || len(a.Errors) > 0 || p.Entry != nil || len(p.UserErrors) != 1 || !slices.Equal(p.UserErrors[0].Field, tc.field) || p.UserErrors[0].Code == "INTERNAL" {
					t.Fatalf("%d %+v %+v", status, a.Errors, p)
				}
				if version() != v0 {
					t.Fatal("a refused addition changed the glossary")
				}
			})
		}
	})

	var added struct{ AddGlossaryEntry glossaryPayload }
	if _, a := gqlAs(t, hs, admin, glossaryMutation, map[string]any{"i": entry}, &added); len(a.Errors) > 0 || added.AddGlossaryEntry.Entry == nil || added.AddGlossaryEntry.Entry.Key != "zombie process" {
		t.Fatalf("the admin's addition: %+v %+v", a.Errors, added)
	}
	if version() == v0 {
		t.Fatal("the glossary's version did not move")
	}
	if got := glossarySearch(t, hs, "zombie process"); !slices.Equal(got, []string{"IL-0002", "IL-0001"}) {
		t.Fatalf("after the entry, English finds %v, want IL-0002 then the Korean IL-0001", got)
	}
	if got := glossarySearch(t, hs, "좀비 프로세스"); !slices.Equal(got, []string{"IL-0001", "IL-0002"}) {
		t.Fatalf("after the entry, Korean finds %v, want IL-0001 then the English IL-0002", got)
	}
	var listed struct {
		Glossary struct {
			TotalCount int
			Nodes      []struct {
				Key, Note string
				Ko        []string
			}
		}
	}
	gqlAs(t, hs, "", `{ glossary(contains: "ZOMBIE") { totalCount nodes { key ko note } } }`, nil, &listed)
	if listed.Glossary.TotalCount != 1 || listed.Glossary.Nodes[0].Key != "zombie process" || listed.Glossary.Nodes[0].Note == "" {
		t.Fatalf("the glossary query: %+v", listed)
	}

	var removed struct{ RemoveGlossaryEntry glossaryPayload }
	if _, a := gqlAs(t, hs, admin, `mutation { removeGlossaryEntry(key: "Zombie Process") { entry { key } userErrors { code field } } }`, nil, &removed); len(a.Errors) > 0 || removed.RemoveGlossaryEntry.Entry == nil {
		t.Fatalf("the removal: %+v %+v", a.Errors, removed)
	}
	if got := glossarySearch(t, hs, "zombie process"); !slices.Equal(got, []string{"IL-0002"}) {
		t.Fatalf("after the removal, English finds %v, want IL-0002 only", got)
	}
	// The glossary query sorts each version once (graph/glossary.go): the
	// version after the removal is sorted again, without the entry.
	listed.Glossary.TotalCount = -1
	gqlAs(t, hs, "", `{ glossary(contains: "ZOMBIE") { totalCount nodes { key ko note } } }`, nil, &listed)
	if listed.Glossary.TotalCount != 0 {
		t.Fatalf("the glossary query after the removal: %+v", listed)
	}
	gqlAs(t, hs, admin, `mutation { removeGlossaryEntry(key: "zombie process") { userErrors { code field } } }`, nil, &removed)
	if ues := removed.RemoveGlossaryEntry.UserErrors; len(ues) != 1 || ues[0].Code != "NOT_FOUND" || !slices.Equal(ues[0].Field, []string{"key"}) {
		t.Fatalf("removing it again: %+v", removed)
	}

	var h struct {
		TaxonomyHistory struct {
			Nodes []struct{ Action, Author, Subject string }
		}
	}
	gqlAs(t, hs, admin, `{ taxonomyHistory(first: 10) { nodes { action author subject } } }`, nil, &h)
	var got []string
	for _, n := range h.TaxonomyHistory.Nodes {
		got = append(got, n.Action+" "+n.Subject+" "+n.Author)
	}
	want := []string{"GLOSSARY_REMOVE glossary:zombie process glossary-admin", "GLOSSARY_ADD glossary:zombie process glossary-admin"}
	if !slices.Equal(got, want) {
		t.Fatalf("the history:\n%s", strings.Join(got, "\n"))
	}

	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/v1/taxonomy/changes?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, body := testutil.RoundTrip(t, req)
	var feed []string
	for sc := bufio.NewScanner(bytes.NewReader(body)); sc.Scan(); {
		var e incidentlib.TaxonomyChange
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err, sc.Text())
		}
		feed = append(feed, string(e.Action)+" "+e.Subject+" "+e.Author)
	}
	if slices.Reverse(feed); resp.StatusCode != http.StatusOK || !slices.Equal(feed, want) {
		t.Fatalf("the REST feed: %d %v", resp.StatusCode, feed)
	}
	if problems, err := db.Maintenance().Check(context.Background()); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// TestGlossaryPages: the glossary pages by key, each page after the last
// one's end cursor, and a malformed cursor or a long contains is refused
// with its argument.
func TestGlossaryPages(t *testing.T) {
	_, hs, _, _ := glossaryServer(t)
	type page struct {
		Glossary struct {
			TotalCount int
			Nodes      []struct{ Key string }
			PageInfo   struct {
				HasNextPage bool
				EndCursor   string
			}
		}
	}
	var keys []string
	after := ""
	for range 3 {
		var p page
		vars := map[string]any{}
		if after != "" {
			vars["a"] = after
		}
		if _, a := gqlAs(t, hs, "", `query($a: String) { glossary(first: 40, after: $a) { totalCount nodes { key } pageInfo { hasNextPage endCursor } } }`, vars, &p); len(a.Errors) > 0 {
			t.Fatal(a.Errors)
		}
		if len(p.Glossary.Nodes) != 40 || !p.Glossary.PageInfo.HasNextPage || p.Glossary.TotalCount < 300 {
			t.Fatalf("page: %d entries of %d", len(p.Glossary.Nodes), p.Glossary.TotalCount)
		}
		for _, n := range p.Glossary.Nodes {
			keys = append(keys, n.Key)
		}
		after = p.Glossary.PageInfo.EndCursor
	}
	if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Fatalf("the pages are not in key order, each key once: %v", keys)
	}
	for _, tc := range []struct{ q, code string }{
		{`{ glossary(after: "not-a-cursor") { totalCount } }`, incidentlib.EBADCURSOR},
		{`{ glossary(contains: "` + strings.Repeat("x", 65) + `") { totalCount } }`, incidentlib.EINVALID},
		{`{ glossary(first: 100000) { totalCount } }`, incidentlib.EINVALID},
	} {
		if _, a := gqlAs(t, hs, "", tc.q, nil, nil); len(a.Errors) == 0 || a.Errors[0].Extensions.Code != tc.code {
			t.Errorf("%s: %+v, want %s", tc.q, a, tc.code)
		}
	}
}

// changingGlossary is the store's glossary at a new version on every
// read: each search then compiles its translator again, as the first
// search after an admin's change does.
type changingGlossary struct {
	g *incidentlib.Glossary
	n uint64
}

func (c *changingGlossary) Glossary(context.Context) (*incidentlib.Glossary, error) {
	c.n++
	return &incidentlib.Glossary{Entries: c.g.Entries, Version: c.g.Version + c.n}, nil
}

// BenchmarkSearchAfterGlossaryChange: what the first search after a
// change of the glossary costs (the translator compiled again from the
// store's glossary) against a search at a glossary that did not change,
// on 2,000 generated incidents. docs/search.md gives the figures.
func BenchmarkSearchAfterGlossaryChange(b *testing.B) {
	ctx := context.Background()
	builtin, err := seeds.Glossary(seeds.MustTaxonomy())
	if err != nil {
		b.Fatal(err)
	}
	db := testutil.ServerStore(b, testutil.Corpus(b, 2000, 7), storage.Options{Glossary: builtin, RecordCache: 4000})
	g, err := db.Taxonomies().Glossary(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    incidentlib.GlossaryReader
	}{{"Unchanged", db.Taxonomies()}, {"Changed", &changingGlossary{g: g}}} {
		b.Run(tc.name, func(b *testing.B) {
			idx, err := search.Open(ctx, db.Incidents(), filepath.Join(b.TempDir(), "search"), search.Options{Glossary: tc.r})
			if err != nil {
				b.Fatal(err)
			}
			defer idx.Close()
			first := 20
			for b.Loop() {
				if _, err := idx.Search(ctx, incidentlib.SearchQuery{Query: "replication lag"}, incidentlib.PageArgs{First: &first}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
