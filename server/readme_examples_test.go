package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// TestREADMEExamples runs every example of the README against the real
// handler over the seed incidents, with search: each ```graphql block
// (the write with an editor token) and each search query the Search
// section names. An example fails on an error or an empty answer (a null
// or empty top-level field, a totalCount of 0). TestGraphiQLExamplesRun
// does the same for the playground's tabs.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	db := testutil.OpenSeeded(t, storage.Options{})
	idx, err := search.Open(context.Background(), db.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	ts, _ := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{Search: idx})
	secret, _, err := db.Tokens().CreateToken(context.Background(), "readme-editor", incidentlib.RoleEditor, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	post := func(t *testing.T, query string, vars map[string]any) map[string]json.RawMessage {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Data   map[string]json.RawMessage
			Errors []json.RawMessage
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 || len(r.Errors) > 0 {
			t.Fatalf("%d %v %s\n%s", resp.StatusCode, err, r.Errors, query)
		}
		for name, v := range r.Data {
			if s := string(v); s == "null" || s == "[]" || strings.Contains(s, `"totalCount":0`) || strings.Contains(s, `"userErrors":[{`) {
				t.Errorf("%s is empty: %.300s", name, s)
			}
		}
		return r.Data
	}

	blocks := regexp.MustCompile("(?s)```graphql\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 4 {
		t.Fatalf("%d graphql examples in the README", len(blocks))
	}
	for i, b := range blocks {
		t.Run("Block"+string(rune('A'+i)), func(t *testing.T) { post(t, b[1], nil) })
	}

	// The search examples: the backquoted queries of the Search section's
	// first sentence and of "Spellings meet".
	var queries []string
	for _, span := range []struct{ from, to string }{
		{"in English and Korean:", "English is case-folded"},
		{"Spellings meet:", "and a search that finds nothing"},
	} {
		_, rest, ok := strings.Cut(string(readme), span.from)
		sentence, _, ok2 := strings.Cut(rest, span.to)
		if !ok || !ok2 {
			t.Fatalf("the README has no %q ... %q", span.from, span.to)
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(sentence, -1) {
			queries = append(queries, m[1])
		}
	}
	if len(queries) < 8 {
		t.Fatalf("search examples %q", queries)
	}
	for _, q := range queries {
		t.Run("Search "+q, func(t *testing.T) {
			post(t, `query($q: String!) { search(query: $q) { totalCount edges { node { id } } } }`, map[string]any{"q": q})
		})
	}

	// A word one letter off is answered with words of the library as it
	// writes them.
	t.Run("Suggestions", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"query": `{ search(query: "keepalve") { totalCount suggestions } }`})
		resp, err := http.Post(ts.URL+"/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Search struct {
					TotalCount  int
					Suggestions []string
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Data.Search.TotalCount != 0 || len(r.Data.Search.Suggestions) == 0 {
			t.Fatalf("%v %+v", err, r)
		}
		for _, s := range r.Data.Search.Suggestions {
			found := post(t, `query($q: String!) { search(query: $q) { totalCount edges { highlights { snippet } } } }`, map[string]any{"q": s})
			var hits struct {
				Edges []struct{ Highlights []struct{ Snippet string } }
			}
			if err := json.Unmarshal(found["search"], &hits); err != nil {
				t.Fatal(err)
			}
			var snippets strings.Builder
			for _, e := range hits.Edges {
				for _, h := range e.Highlights {
					snippets.WriteString(strings.ToLower(h.Snippet) + "\n")
				}
			}
			// Marked as one word somewhere, as written (case folded).
			if !strings.Contains(snippets.String(), "<mark>"+s+"</mark>") {
				t.Errorf("suggestion %q is not a word the library writes:\n%s", s, snippets.String())
			}
		}
	})
}
