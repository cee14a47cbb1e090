package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

func TestGraphiQLAssetsServedLocally(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	resp, err := ts.Client().Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(page, []byte("https://")) || bytes.Contains(page, []byte("//cdn")) {
		t.Errorf("the page loads something from elsewhere")
	}
	for _, tab := range []string{"ListPage", "IncidentPage", "Facets"} {
		if !bytes.Contains(page, []byte(tab)) {
			t.Errorf("no example %s", tab)
		}
	}
	srcs := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)" integrity="(sha256-[^"]+)"`).FindAllSubmatch(page, -1)
	if len(srcs) != 5 { // GraphiQL, its CSS, React, ReactDOM, graphql-ws
		t.Fatalf("%d assets in the page, want 5", len(srcs))
	}
	for _, m := range srcs {
		r, err := ts.Client().Get(ts.URL + string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if want := html.UnescapeString(string(m[2])); r.StatusCode != 200 || sri(b) != want {
			t.Errorf("%s: %d, SRI %s, page says %s", m[1], r.StatusCode, sri(b), m[2])
		}
	}
}

func sri(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(s[:])
}

func TestGraphiQLExamplesRun(t *testing.T) {
	gloss, err := seeds.Glossary(seeds.MustTaxonomy()) // the glossary tab reads the store's
	if err != nil {
		t.Fatal(err)
	}
	db := testutil.ServerStore(t, seedIncidents(t), storage.Options{RecordCache: 20000, Glossary: gloss})
	idx, err := search.Open(context.Background(), db.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ts := serveStore(t, db, server.Config{}, testutil.ServerParts{Search: idx})
	tabs := server.ExampleTabs()
	if len(tabs) < 3 {
		t.Fatalf("%d example tabs", len(tabs))
	}
	// The write example runs with a real token in place of the placeholder.
	secret, _, err := db.Tokens().CreateToken(context.Background(), "example-editor", incidentlib.RoleEditor, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tab := range tabs {
		name := regexp.MustCompile(`(query|mutation|subscription) (\w+)`).FindStringSubmatch(tab.Query)
		if name == nil {
			t.Fatalf("an example without an operation name: %.80s", tab.Query)
		}
		t.Run(name[2], func(t *testing.T) {
			if name[1] == "subscription" {
				t.Skip("a stream: TestGraphiQLLiveTab (graphiql_live_test.go) runs it")
			}
			var vars map[string]any
			if tab.Variables != "" {
				if err := json.Unmarshal([]byte(tab.Variables), &vars); err != nil {
					t.Fatal(err)
				}
			}
			var headers []string
			if tab.Headers != "" {
				var h map[string]string
				if err := json.Unmarshal([]byte(strings.ReplaceAll(tab.Headers, server.TokenPlaceholder, secret)), &h); err != nil {
					t.Fatal(err)
				}
				for k, v := range h {
					headers = append(headers, k, v)
				}
			}
			r := testutil.PostGraphQL(t, ts.Server, map[string]any{"query": tab.Query, "variables": vars}, headers...)
			var out gqlResponse
			if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || len(out.Errors) > 0 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if len(out.Data) < 40 || bytes.Contains(out.Data, []byte(`"totalCount":0`)) {
				t.Errorf("little data: %s", out.Data)
			}
		})
	}
}
