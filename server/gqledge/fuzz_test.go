package gqledge_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// FuzzGraphQL sends random documents and variables through the whole
// handler, by POST or GET, and requires an answer that leaks nothing: a
// JSON object with the GraphQL-over-HTTP status, every error with a code
// and none internal, no stack or panic text, extensions.cost present, and
// no resolver run for a request refused by a limit. The corpus is in
// testdata/fuzz/FuzzGraphQL; without -fuzz only it runs.
func FuzzGraphQL(f *testing.F) {
	for _, seed := range []struct {
		q    string
		vars string
		get  bool
	}{
		{`{ incident(id: "IL-0213") { id title(lang: KO) organization { name } } }`, ``, false},
		{`query($n: Int) { incidents(first: $n) { nodes { id related { id } } } }`, `{"n": 3}`, false},
		{`query($f: IncidentFilter) { incidents(filter: $f) { totalCount facets { kind } } }`, `{"f": {"symptoms": ["high-latency"], "dateFrom": "2020-01-01"}}`, true},
		{`{ incidents(after: "!!") { totalCount } }`, ``, false},
		{`{ a: incidents { totalCount } b: incidents { totalCount } }`, ``, true},
		{`{ incident(id: "IL-0213") { ...A } } fragment A on Incident { related { ...A } }`, ``, false},
		{`mutation { reviewIncident(id: "IL-0213", decision: APPROVE) { incident { id } } }`, ``, true},
		{`{ __schema { types { name } } }`, ``, false},
		{`{ incidents(`, ``, false},
		{`query($id: ID!) { node(id: $id) { id } }`, `{"id": 5}`, false},
	} {
		f.Add(seed.q, []byte(seed.vars), seed.get)
	}
	hs := testutil.NewCountingServer(f, seedIncidents(f), server.Config{Prod: true})
	refusals := map[string]bool{
		gqledge.CodeCostLimit: true, gqledge.CodeDepthLimit: true, gqledge.CodeAliasLimit: true, gqledge.CodeRepeatLimit: true,
		gqledge.CodeTokenLimit: true, gqledge.CodeBodyTooLarge: true, gqledge.CodeBatchLimit: true, gqledge.CodeMethodNotAllowed: true,
		incidentlib.EUNAUTHENTICATED: true, // a mutation without a token
	}
	f.Fuzz(func(t *testing.T, q string, vars []byte, get bool) {
		var req *http.Request
		if get {
			v := url.Values{"query": {q}}
			if json.Valid(vars) {
				v.Set("variables", string(vars))
			}
			req = httptest.NewRequest(http.MethodGet, "/graphql?"+v.Encode(), nil)
		} else {
			body := map[string]any{"query": q}
			if json.Valid(vars) {
				body["variables"] = json.RawMessage(vars)
			}
			b, err := json.Marshal(body)
			if err != nil {
				t.Skip()
			}
			req = httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/graphql-response+json")
		before := hs.Work()
		rec := httptest.NewRecorder()
		hs.Srv.ServeHTTP(rec, req)
		raw := rec.Body.Bytes()

		switch rec.Code {
		case 200, 400, 413:
		case 401: // a mutation without a token
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Fatalf("401 without WWW-Authenticate: %s", raw)
			}
		case 405:
			if !get {
				t.Fatalf("405 for a POST: %s", raw)
			}
		default:
			t.Fatalf("status %d: %.500s", rec.Code, raw)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/graphql-response+json") {
			t.Fatalf("content type %q", ct)
		}
		var resp struct {
			Data   json.RawMessage `json:"data"`
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
			Extensions struct {
				Cost *int `json:"cost"`
			} `json:"extensions"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			t.Fatalf("not a JSON object (%v): %.500s", err, raw)
		}
		if resp.Extensions.Cost == nil || *resp.Extensions.Cost < 0 {
			t.Fatalf("no extensions.cost: %.500s", raw)
		}
		refused := false
		for _, e := range resp.Errors {
			for _, leak := range []string{"goroutine ", ".go:", "runtime.", "panic"} {
				if strings.Contains(e.Message, leak) && !strings.Contains(q, leak) && !bytes.Contains(vars, []byte(leak)) {
					t.Fatalf("an error leaks %q: %.500s", leak, raw)
				}
			}
			code, _ := e.Extensions["code"].(string)
			switch {
			case code == "":
				t.Fatalf("an error without a code: %.500s", raw)
			case code == incidentlib.EINTERNAL:
				t.Fatalf("an internal error: %.500s", raw)
			case refusals[code]:
				refused = true
			}
		}
		if refused && hs.Work() != before {
			t.Fatalf("a refused request ran resolvers or read the store: %.500s", raw)
		}
	})
}
