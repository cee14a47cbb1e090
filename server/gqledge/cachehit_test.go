package gqledge_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// A cache hit is answered before the guard decodes the document
// (server/gqledge/guard.go, graphqlHTTP). These tests warm the cache with a request,
// prove that the same request is then a hit (so the cache would answer it),
// and then send the requests the guard must refuse: each must be refused,
// and none may be counted as a hit.

// rawPost sends body as it is, by method, with headers (name, value
// pairs); a Content-Type of application/json unless headers set one.
func (ts *testServer) rawPost(tb testing.TB, method string, body []byte, headers ...string) *rawResponse {
	tb.Helper()
	req, _ := http.NewRequest(method, ts.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return ts.do(tb, req)
}

// warm sends a request twice and fails unless the second answer is a
// cache hit with the first one's bytes.
func warm(tb testing.TB, ts *testServer, send func() *rawResponse) *rawResponse {
	tb.Helper()
	first := send()
	if first.Status != http.StatusOK || first.Code() != "" {
		tb.Fatalf("the warming request failed: %d %s", first.Status, first.Body)
	}
	c := ts.counters(tb)
	second := send()
	if c.get(tb, "hit") != 1 || !bytes.Equal(first.Body, second.Body) {
		tb.Fatalf("the warmed request is not a hit (%v hits): %s", c.get(tb, "hit"), second.Body)
	}
	return first
}

// refused checks that r is a refusal with code and status, not served from
// the cache (c counts from before it).
func refused(tb testing.TB, c *counters, r *rawResponse, status int, code string) {
	tb.Helper()
	if r.Status != status || r.Code() != code {
		tb.Errorf("want %d %s, got %d %q: %.300s", status, code, r.Status, r.Code(), r.Body)
	}
	if h := c.get(tb, "hit"); h != 0 {
		tb.Errorf("a request that must be refused was counted as a hit (%v)", h)
	}
}

func TestCacheHitStillGuarded(t *testing.T) {
	incs := seedIncidents(t)
	listBody, _ := json.Marshal(map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 2}})

	t.Run("HTTPChecksFirst", func(t *testing.T) {
		ts := newEdgeServer(t, incs, server.Config{})
		warm(t, ts, func() *rawResponse { return ts.rawPost(t, http.MethodPost, listBody) })
		// The same bytes, which the cache knows, in requests the guard
		// refuses for their HTTP form.
		for _, tc := range []struct {
			name    string
			method  string
			headers []string
			status  int
			code    string
		}{
			{"ContentTypeText", http.MethodPost, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType, gqledge.CodeUnsupportedMediaType},
			{"CharsetLatin1", http.MethodPost, []string{"Content-Type", "application/json; charset=iso-8859-1"}, http.StatusUnsupportedMediaType, gqledge.CodeUnsupportedMediaType},
			{"NotAcceptable", http.MethodPost, []string{"Accept", "text/html"}, http.StatusNotAcceptable, gqledge.CodeNotAcceptable},
			{"MethodPUT", http.MethodPut, nil, http.StatusMethodNotAllowed, gqledge.CodeMethodNotAllowed},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := ts.counters(t)
				refused(t, c, ts.rawPost(t, tc.method, listBody, tc.headers...), tc.status, tc.code)
			})
		}
		t.Run("GETVariablesNotAnObject", func(t *testing.T) {
			params := url.Values{"query": {cacheListPage}, "variables": {`{"first":2}`}}
			warm(t, ts, func() *rawResponse { return ts.get(t, params) })
			c := ts.counters(t)
			for _, v := range []string{`[2]`, `{"first":2`} {
				refused(t, c, ts.get(t, url.Values{"query": {cacheListPage}, "variables": {v}}), http.StatusBadRequest, gqledge.CodeBadRequest)
			}
		})
	})

	t.Run("OversizedBody", func(t *testing.T) {
		ts := newEdgeServer(t, incs, server.Config{Limits: gqledge.Limits{MaxBody: 1024}})
		if len(listBody) > 1024 {
			t.Fatalf("the list page's body (%d bytes) must fit the limit", len(listBody))
		}
		warm(t, ts, func() *rawResponse { return ts.rawPost(t, http.MethodPost, listBody) })
		// The same request with white space after it: the same JSON, over
		// the limit; announced, and chunked (no Content-Length).
		padded := append(bytes.Clone(listBody), bytes.Repeat([]byte(" "), 2048)...)
		c := ts.counters(t)
		refused(t, c, ts.rawPost(t, http.MethodPost, padded), http.StatusRequestEntityTooLarge, gqledge.CodeBodyTooLarge)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/graphql", io.MultiReader(bytes.NewReader(padded)))
		req.Header.Set("Content-Type", "application/json")
		if req.ContentLength != 0 {
			t.Fatalf("the request is not chunked: Content-Length %d", req.ContentLength)
		}
		refused(t, c, ts.do(t, req), http.StatusRequestEntityTooLarge, gqledge.CodeBodyTooLarge)
	})

	t.Run("GETMutation", func(t *testing.T) {
		ts := newEdgeServer(t, incs, server.Config{})
		doc := `query Q { incident(id: "IL-0213") { id } } mutation M { reviewIncident(id: "IL-0213", decision: APPROVE) { incident { id } } }`
		warm(t, ts, func() *rawResponse { return ts.get(t, url.Values{"query": {doc}, "operationName": {"Q"}}) })
		warm(t, ts, func() *rawResponse {
			return ts.post(t, map[string]any{"query": doc, "operationName": "Q"})
		})
		c := ts.counters(t)
		r := ts.get(t, url.Values{"query": {doc}, "operationName": {"M"}})
		refused(t, c, r, http.StatusMethodNotAllowed, gqledge.CodeMethodNotAllowed)
		if r.Header.Get("Allow") != "POST" {
			t.Errorf("Allow %q", r.Header.Get("Allow"))
		}
	})

	t.Run("RateLimit", func(t *testing.T) {
		// A bucket of 3 that refills a thousandth of a cost per second;
		// { __typename } costs 1, a hit nothing.
		ts := newEdgeServer(t, incs, server.Config{
			Limits:    gqledge.Limits{MaxCost: 3},
			RateLimit: gqledge.RateLimit{CostPerSecond: 0.001},
		})
		body := map[string]any{"query": `{ __typename }`}
		params := url.Values{"query": {`{ __typename }`}}
		warm(t, ts, func() *rawResponse { return ts.post(t, body) }) // 2 left
		c := ts.counters(t)
		if r := ts.get(t, params); r.Status != http.StatusOK || c.get(t, "hit") != 1 {
			t.Fatalf("by GET: %d, %v hits: %s", r.Status, c.get(t, "hit"), r.Body)
		}
		for _, q := range []string{`{ a: __typename }`, `{ b: __typename }`} { // 0 left
			if r := ts.post(t, map[string]any{"query": q}); r.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", q, r.Status, r.Body)
			}
		}
		c = ts.counters(t)
		for _, r := range []*rawResponse{ts.post(t, body), ts.get(t, params)} {
			refused(t, c, r, http.StatusTooManyRequests, gqledge.CodeRateLimited)
			if r.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
		}
	})

	t.Run("TrustedDocuments", func(t *testing.T) {
		listed := `query Listed { incidents(first: 2) { nodes { id } } }`
		byRelay := `query ByRelayID { incident(id: "IL-0213") { id } }`
		other := `query Other { incidents(first: 1) { nodes { id } } }`
		ts := newTrustedServer(t, incs, map[string]string{hashOf(listed): listed, "relay-id-7": byRelay})
		warm(t, ts, func() *rawResponse { return ts.post(t, map[string]any{"query": listed}) })
		warm(t, ts, func() *rawResponse { return ts.get(t, url.Values{"extensions": {apqParam("relay-id-7")}}) })
		t.Run("TextWithUnknownID", func(t *testing.T) {
			c := ts.counters(t)
			r := ts.post(t, map[string]any{"query": listed, "extensions": apqExt("no-such-id")})
			refused(t, c, r, http.StatusOK, gqledge.CodePersistedQueryNotFound)
		})
		t.Run("TextWithTheIDOfAnother", func(t *testing.T) {
			c := ts.counters(t)
			r := ts.post(t, map[string]any{"query": listed, "extensions": apqExt("relay-id-7")})
			refused(t, c, r, http.StatusBadRequest, gqledge.CodeForbidden)
		})
		t.Run("UnlistedIDThatIsTheHashOfAListedDocument", func(t *testing.T) {
			// byRelay is listed under relay-id-7 only: its SHA-256 is no id.
			c := ts.counters(t)
			r := ts.get(t, url.Values{"extensions": {apqParam(hashOf(byRelay))}})
			refused(t, c, r, http.StatusOK, gqledge.CodePersistedQueryNotFound)
		})
		t.Run("UnlistedText", func(t *testing.T) {
			c := ts.counters(t)
			refused(t, c, ts.post(t, map[string]any{"query": other}), http.StatusBadRequest, gqledge.CodeForbidden)
		})
	})

	t.Run("PersistedQueryExtensionAPQRefuses", func(t *testing.T) {
		ts := newEdgeServer(t, incs, server.Config{})
		q := `query Two { incidents(first: 2) { nodes { id } } }`
		warm(t, ts, func() *rawResponse { return ts.post(t, map[string]any{"query": q}) })
		for name, body := range map[string]map[string]any{
			"HashOfAnotherDocument": {"query": q, "extensions": apqExt(hashOf(cacheListPage))},
			"Version2":              {"extensions": map[string]any{"persistedQuery": map[string]any{"version": 2, "sha256Hash": hashOf(q)}}},
		} {
			t.Run(name, func(t *testing.T) {
				c := ts.counters(t)
				r := ts.post(t, body)
				if !bytes.Contains(r.Body, []byte(`"errors"`)) || bytes.Contains(r.Body, []byte(`"nodes"`)) {
					t.Errorf("gqlgen's APQ refuses this request; it was answered %d %s", r.Status, r.Body)
				}
				if h := c.get(t, "hit"); h != 0 {
					t.Errorf("answered from the cache (%v hits)", h)
				}
			})
		}
	})
}
