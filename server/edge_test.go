package server_test

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// The playground's introspection and the favicon through the real handler.

// TestPlaygroundIntrospection: the introspection queries of GraphiQL and
// of the common clients and code generators pass the limits at their
// defaults, and return the schema; a hostile deep introspection is still
// refused, and the depth limit still bounds data.
func TestPlaygroundIntrospection(t *testing.T) {
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
	for _, file := range []string{"graphiql.graphql", "full.graphql"} {
		t.Run(file, func(t *testing.T) {
			q, err := os.ReadFile("testdata/introspection/" + file)
			if err != nil {
				t.Fatal(err)
			}
			body := []byte(`{"query": ` + testutil.MustJSON(string(q)) + `, "operationName": "IntrospectionQuery"}`)
			r := hs.PostBody(t, body)
			if r.Status != 200 || len(r.Errors) != 0 || !bytes.Contains(r.Raw, []byte(`"name":"incidents"`)) {
				t.Fatalf("%d %.500s", r.Status, r.Raw)
			}
		})
	}
	ofTypes := func(n int) string {
		return `{ __type(name: "Incident") { fields { type { ` + strings.Repeat("ofType { ", n) + "name" + strings.Repeat(" }", n) + ` } } } }`
	}
	t.Run("NineOfTypesAndMore", func(t *testing.T) {
		if r := hs.Post(t, ofTypes(16), nil); r.Status != 200 || len(r.Errors) != 0 {
			t.Fatalf("%d %.300s", r.Status, r.Raw)
		}
	})
	t.Run("HostileDeepIntrospection", func(t *testing.T) {
		for _, q := range []string{
			ofTypes(40),
			// Through fragments, as GraphiQL's query spreads them.
			`{ __schema { types { ...T } } } fragment T on __Type { ofType { ...U } } fragment U on __Type { ` +
				strings.Repeat("ofType { ", 30) + "name" + strings.Repeat(" }", 30) + ` }`,
		} {
			r := hs.Post(t, q, nil)
			if r.Status != 400 || r.Code() != gqledge.CodeDepthLimit {
				t.Fatalf("%d %.300s", r.Status, r.Raw)
			}
			testutil.NoDataEntry(t, r.Raw)
		}
	})
	t.Run("DataStillBounded", func(t *testing.T) {
		q := `{ incident(id: "IL-0213") { ...R } } fragment R on Incident { ` +
			strings.Repeat("related { ", 13) + "id" + strings.Repeat(" }", 13) + ` }`
		if r := hs.Post(t, q, nil); r.Status != 400 || r.Code() != gqledge.CodeDepthLimit {
			t.Fatalf("%d %.300s", r.Status, r.Raw)
		}
	})
}

// TestFavicon: the icon browsers ask for on every page load is served,
// cacheable, not a 404.
func TestFavicon(t *testing.T) {
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
	resp, err := hs.Client().Get(hs.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/x-icon" ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") || len(b) < 6 || !bytes.HasPrefix(b, []byte{0, 0, 1, 0}) {
		t.Fatalf("%d %v %d bytes", resp.StatusCode, resp.Header, len(b))
	}
}
