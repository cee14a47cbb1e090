package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// TestNoDefer: the schema has no @defer (graph/nodefer.go), and
// introspection, GET /schema.graphql and behaviour agree on it: a deferred
// query, asked for as multipart/mixed, is refused as a validation error
// instead of coming back as one ordinary response.
func TestNoDefer(t *testing.T) {
	ts, _ := testutil.ServerTest(t, testutil.OpenSeeded(t, storage.Options{}), server.Config{}, testutil.ServerParts{})
	do := func(t *testing.T, req *http.Request) (int, []byte) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	gql := func(query, accept string) *http.Request {
		body, _ := json.Marshal(map[string]any{"query": query})
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/graphql", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		return req
	}

	t.Run("Introspection", func(t *testing.T) {
		status, b := do(t, gql(`{ __schema { directives { name } } }`, "application/json"))
		var r struct {
			Data struct {
				Schema struct{ Directives []struct{ Name string } } `json:"__schema"`
			}
		}
		if err := json.Unmarshal(b, &r); status != 200 || err != nil || len(r.Data.Schema.Directives) == 0 {
			t.Fatalf("%d %s", status, b)
		}
		for _, d := range r.Data.Schema.Directives {
			if d.Name == "defer" {
				t.Fatalf("introspection lists @defer: %s", b)
			}
		}
	})
	t.Run("SDL", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/schema.graphql", nil)
		status, b := do(t, req)
		if status != 200 || !strings.Contains(string(b), "type Incident") || strings.Contains(string(b), "@defer") {
			t.Fatalf("%d, @defer in the SDL: %v", status, strings.Contains(string(b), "@defer"))
		}
	})
	t.Run("ErrDeferRefused", func(t *testing.T) {
		q := `{ incident(id: "IL-0213") { id ... @defer(label: "more") { title } } }`
		// With application/json a request error is 200, with
		// application/graphql-response+json 400 (docs/graphql-over-http.md).
		for accept, want := range map[string]int{`multipart/mixed;deferSpec=20220824, application/json`: 200, "application/graphql-response+json": 400} {
			status, b := do(t, gql(q, accept))
			var r struct {
				Data   json.RawMessage
				Errors []struct {
					Message    string
					Extensions struct{ Code string }
				}
			}
			if err := json.Unmarshal(b, &r); err != nil || status != want || len(r.Errors) == 0 ||
				r.Errors[0].Extensions.Code != "GRAPHQL_VALIDATION_FAILED" || len(r.Data) > 0 && string(r.Data) != "null" {
				t.Fatalf("Accept %s: %d %s", accept, status, b)
			}
		}
	})
}
