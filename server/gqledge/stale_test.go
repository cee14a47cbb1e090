package gqledge_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/incidentlib/incidentlib/server"
)

// staleOf reads extensions.stale of a GraphQL response body.
func staleOf(tb testing.TB, body []byte) bool {
	tb.Helper()
	var out struct {
		Extensions map[string]any `json:"extensions"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		tb.Fatalf("%v: %.300s", err, body)
	}
	return out.Extensions["stale"] == true
}

// A server whose reads may be behind (Config.Stale, a cluster node without
// a quorum) marks every response: the header on all of them, and
// extensions.stale on GraphQL ones, whether the response cache holds
// them or not; once it is level again, nothing is marked and the cache
// answers as before.
func TestStaleMarksEveryResponse(t *testing.T) {
	var stale atomic.Bool
	ts := newEdgeServer(t, seedIncidents(t), server.Config{Stale: stale.Load})
	list := map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 3}}
	getParams := url.Values{"query": {`{ incident(id: "IL-0213") { title } }`}}
	get := func() *rawResponse { return ts.get(t, getParams) }
	post := func() *rawResponse { return ts.post(t, list) }
	rest := func(path string) *rawResponse {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		return ts.do(t, req)
	}
	const (
		restIncident = "/api/v1/incidents/IL-0213"
		restCSV      = "/api/v1/incidents.csv?domains=database"
	)
	marked := func(name string, r *rawResponse, graphql, want bool) {
		t.Helper()
		if r.Status != http.StatusOK {
			t.Fatalf("%s: status %d: %.300s", name, r.Status, r.Body)
		}
		if got := r.Header.Get(server.StaleHeader) == "true"; got != want {
			t.Errorf("%s: header %s %q, want it %v", name, server.StaleHeader, r.Header.Get(server.StaleHeader), want)
		}
		if graphql && staleOf(t, r.Body) != want {
			t.Errorf("%s: extensions.stale is %v, want %v: %.300s", name, !want, want, r.Body)
		}
	}

	// Level: the GraphQL responses are cached (the second of each is a
	// hit), the CSV export too; nothing is marked.
	freshPost := warm(t, ts, post)
	marked("POST", freshPost, true, false)
	freshGet := warm(t, ts, get)
	marked("GET", freshGet, true, false)
	if freshGet.Header.Get("ETag") == "" {
		t.Fatal("a cached GET carries no ETag")
	}
	marked("REST incident", rest(restIncident), false, false)
	freshCSV := rest(restCSV)
	marked("REST CSV", freshCSV, false, false)

	// Stale: the cached GraphQL responses are not replayed (they carry no
	// mark); each is executed and marked, and not stored.
	stale.Store(true)
	c := ts.counters(t)
	for range 2 {
		r := post()
		marked("stale POST", r, true, true)
		g := get()
		marked("stale GET", g, true, true)
		if g.Header.Get("ETag") != "" || g.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("a stale GET is cacheable downstream: ETag %q, Cache-Control %q", g.Header.Get("ETag"), g.Header.Get("Cache-Control"))
		}
		if !bytes.Equal(dataOf(t, r.Body), dataOf(t, freshPost.Body)) {
			t.Errorf("the stale POST's data differ from the level one's: %.300s", r.Body)
		}
	}
	// A conditional GET with the level response's ETag is answered in
	// full, marked: a 304 would tell the client its copy is current.
	cond := ts.get(t, getParams, "If-None-Match", freshGet.Header.Get("ETag"))
	marked("stale conditional GET", cond, true, true)
	for _, n := range []string{"hit", "stores"} {
		if got := c.get(t, n); got != 0 {
			t.Errorf("stale: %s %v, want 0", n, got)
		}
	}
	marked("stale REST incident", rest(restIncident), false, true)
	staleCSV := rest(restCSV) // from the cache: its bytes carry no mark, the header does
	marked("stale REST CSV", staleCSV, false, true)
	if !bytes.Equal(staleCSV.Body, freshCSV.Body) {
		t.Error("the stale CSV export differs from the level one")
	}

	// Level again: the cache answers, unmarked.
	stale.Store(false)
	c = ts.counters(t)
	if r := post(); !bytes.Equal(r.Body, freshPost.Body) {
		t.Errorf("level again: the POST's bytes differ from the first: %.300s", r.Body)
	} else {
		marked("level POST", r, true, false)
	}
	marked("level GET", get(), true, false)
	if got := c.get(t, "hit"); got != 2 {
		t.Errorf("level again: hits %v, want 2", got)
	}
	marked("level REST incident", rest(restIncident), false, false)
	marked("level REST CSV", rest(restCSV), false, false)
}

// dataOf is the data of a GraphQL response body, as sent.
func dataOf(tb testing.TB, body []byte) json.RawMessage {
	tb.Helper()
	var out struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Data) == 0 {
		tb.Fatalf("no data (%v): %.300s", err, body)
	}
	return out.Data
}
