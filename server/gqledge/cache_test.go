package gqledge_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
)

// counters reads cache counters from now on, so that subtests can share
// one server.
type counters struct {
	ts   *testServer
	base map[string]float64
}

var counterNames = []string{"hit", "miss", "stale", "stores"}

func (ts *testServer) counters(tb testing.TB) *counters {
	tb.Helper()
	c := &counters{ts: ts, base: map[string]float64{}}
	for _, n := range counterNames {
		c.base[n] = c.read(tb, n)
	}
	return c
}

func (c *counters) read(tb testing.TB, name string) float64 {
	tb.Helper()
	if name == "stores" {
		return c.ts.metric(tb, "incidentlib_response_cache_stores_total")
	}
	return c.ts.outcome(tb, name)
}

func (c *counters) get(tb testing.TB, name string) float64 {
	tb.Helper()
	return c.read(tb, name) - c.base[name]
}

func hashOf(doc string) string {
	s := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(s[:])
}

func apqExt(hash string) map[string]any {
	return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}
}

func apqParam(hash string) string {
	b, _ := json.Marshal(apqExt(hash))
	return string(b)
}

const cacheListPage = `query ListPage($first: Int) { incidents(first: $first) { nodes { id title organization { name incidentCount } symptoms { label } related { id title } recurrenceOf { id } recurrences { id } } } }`

func TestResponseCache(t *testing.T) {
	incs := seedIncidents(t)
	shared := newTestServer(t, incs) // for the subtests that do not write

	t.Run("HitReplaysExactBytesWithoutReading", func(t *testing.T) {
		ts := shared
		c := ts.counters(t)
		body := map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 3}}
		first := ts.post(t, body)
		if first.Status != 200 || first.Code() != "" {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		before := ts.readTx()
		second := ts.post(t, body)
		if ts.readTx() != before {
			t.Errorf("a cache hit read the store: %d read transactions, was %d", ts.readTx(), before)
		}
		if !bytes.Equal(first.Body, second.Body) {
			t.Errorf("the hit's bytes differ:\n%s\n%s", first.Body, second.Body)
		}
		for _, h := range []string{"Content-Type", "Content-Length"} {
			if first.Header.Get(h) != second.Header.Get(h) {
				t.Errorf("%s: %q, then %q", h, first.Header.Get(h), second.Header.Get(h))
			}
		}
		if first.Header.Get("X-Request-Id") == second.Header.Get("X-Request-Id") {
			t.Error("the request id was replayed from the cache")
		}
		if got := c.get(t, "hit"); got != 1 {
			t.Errorf("hits %v, want 1", got)
		}
		if got := c.get(t, "miss"); got != 1 {
			t.Errorf("misses %v, want 1", got)
		}
		// The same request with other JSON spacing and key order is the same key.
		raw := `{ "variables" : {"first":3}, "query": ` + strconv.Quote(cacheListPage) + ` }`
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/graphql", strings.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/graphql-response+json")
		if third := ts.do(t, req); !bytes.Equal(third.Body, first.Body) || c.get(t, "hit") != 2 {
			t.Errorf("a respaced request was not a hit")
		}
	})

	t.Run("WriteMakesOlderEntriesUnusable", func(t *testing.T) {
		ts := newTestServer(t, incs)
		q := `{ incident(id: "IL-0213") { title } }`
		first := ts.post(t, map[string]any{"query": q})
		if !bytes.Contains(first.Body, []byte("Roblox")) {
			t.Fatalf("unexpected: %s", first.Body)
		}
		changed := *incs[0]
		changed.Title.En = "A changed title"
		if _, err := ts.DB.Incidents().ImportIncidents(context.Background(), []*incidentlib.Incident{&changed}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			t.Fatal(err)
		}
		second := ts.post(t, map[string]any{"query": q})
		if !bytes.Contains(second.Body, []byte("A changed title")) {
			t.Fatalf("served the older response after a write: %s", second.Body)
		}
		if got := ts.outcome(t, "stale"); got != 1 {
			t.Errorf("stale %v, want 1", got)
		}
		if got := ts.metric(t, `incidentlib_response_cache_evictions_total{reason="stale"}`); got != 1 {
			t.Errorf("stale evictions %v, want 1", got)
		}
		third := ts.post(t, map[string]any{"query": q})
		if !bytes.Equal(third.Body, second.Body) || ts.outcome(t, "hit") != 1 {
			t.Errorf("the new response was not cached")
		}
	})

	t.Run("NeverOlderThanTheLastAcknowledgedWrite", func(t *testing.T) {
		// Readers hammer one query while a writer changes its answer; a
		// reader that starts after write N returned must see version N or
		// later, never an older cached one.
		ts := newTestServer(t, incs)
		q := map[string]any{"query": `{ incident(id: "IL-0213") { title } }`}
		version := regexp.MustCompile(`version (\d+)`)
		var committed atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var older atomic.Int64
		for r := 0; r < 4; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					c := committed.Load()
					b, _ := json.Marshal(q)
					resp, err := ts.Client().Post(ts.URL+"/graphql", "application/json", bytes.NewReader(b))
					if err != nil {
						older.Add(1) // counted as a failure; t.Fatal is for the test's goroutine
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					m := version.FindSubmatch(body)
					if c > 0 && (m == nil || mustAtoi(string(m[1])) < c) {
						older.Add(1)
					}
				}
			}()
		}
		for v := int64(1); v <= 10; v++ {
			changed := *incs[0]
			changed.Title.En = "version " + strconv.FormatInt(v, 10)
			if _, err := ts.DB.Incidents().ImportIncidents(context.Background(), []*incidentlib.Incident{&changed}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
				t.Fatal(err)
			}
			committed.Store(v)
			if m := version.FindSubmatch(ts.post(t, q).Body); m == nil || mustAtoi(string(m[1])) != v {
				t.Fatalf("after write %d: %v", v, m)
			}
		}
		close(stop)
		wg.Wait()
		if n := older.Load(); n > 0 {
			t.Errorf("%d responses older than the last acknowledged write (or failed)", n)
		}
		if ts.outcome(t, "hit") == 0 {
			t.Error("the readers never hit the cache: the test proves nothing")
		}
	})

	t.Run("KeyedByLanguageVariablesAndOperation", func(t *testing.T) {
		ts := shared
		c := ts.counters(t)
		q := `query A { incident(id: "IL-0213") { title } } query B { incident(id: "IL-0213") { id } }`
		en := ts.post(t, map[string]any{"query": q, "operationName": "A"}, "Accept-Language", "en")
		ko := ts.post(t, map[string]any{"query": q, "operationName": "A"}, "Accept-Language", "ko-KR,ko;q=0.9")
		b := ts.post(t, map[string]any{"query": q, "operationName": "B"}, "Accept-Language", "ko")
		if bytes.Equal(en.Body, ko.Body) || bytes.Equal(ko.Body, b.Body) {
			t.Fatalf("languages or operations share a response:\n%s\n%s\n%s", en.Body, ko.Body, b.Body)
		}
		if !bytes.Contains(ko.Body, []byte("Consul 클러스터")) {
			t.Errorf("not Korean: %s", ko.Body)
		}
		// No header is English, as is a header naming neither language.
		if none := ts.post(t, map[string]any{"query": q, "operationName": "A"}); !bytes.Equal(none.Body, en.Body) {
			t.Errorf("no Accept-Language: %s", none.Body)
		}
		if c.get(t, "hit") != 1 || c.get(t, "miss") != 3 {
			t.Errorf("hits %v misses %v, want 1 and 3", c.get(t, "hit"), c.get(t, "miss"))
		}
		one := ts.post(t, map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 1}})
		two := ts.post(t, map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 4}})
		if bytes.Equal(one.Body, two.Body) {
			t.Error("variables share a response")
		}
		// The media type the client accepts is part of the key.
		j := ts.post(t, map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 1}}, "Accept", "application/json")
		if j.Header.Get("Content-Type") != "application/json" || one.Header.Get("Content-Type") == "application/json" {
			t.Errorf("content types %q and %q", j.Header.Get("Content-Type"), one.Header.Get("Content-Type"))
		}
	})

	t.Run("ErrorsAreNotCached", func(t *testing.T) {
		ts := shared
		c := ts.counters(t)
		q := `{ incidents(first: 1000) { totalCount } }`
		for i := 0; i < 2; i++ {
			r := ts.post(t, map[string]any{"query": q})
			if r.Code() != incidentlib.EINVALID {
				t.Fatalf("code %q: %s", r.Code(), r.Body)
			}
		}
		bad := ts.post(t, map[string]any{"query": `{ incidents { nope } }`})
		if bad.Status != 400 {
			t.Fatalf("validation error: %d", bad.Status)
		}
		ts.post(t, map[string]any{"query": `{ incidents { nope } }`})
		if c.get(t, "hit") != 0 || c.get(t, "stores") != 0 {
			t.Error("an error response was cached")
		}
	})

	t.Run("MutationsAreNotCached", func(t *testing.T) {
		ts := newEdgeServer(t, incs, server.Config{AdminToken: "cache-test-admin-token-0123"})
		// A mutation that writes nothing and has no GraphQL errors (the
		// problem is a user error in its payload): only its kind keeps it
		// out of the cache.
		m := `mutation { reviewIncident(id: "IL-9999", decision: APPROVE) { userErrors { code } } }`
		for i := 0; i < 2; i++ {
			r := ts.post(t, map[string]any{"query": m}, "Authorization", "Bearer cache-test-admin-token-0123")
			if r.Status != 200 || r.Code() != "" || !bytes.Contains(r.Body, []byte("NOT_FOUND")) {
				t.Fatalf("mutation: %d %s", r.Status, r.Body)
			}
		}
		if ts.outcome(t, "hit") != 0 || ts.metric(t, "incidentlib_response_cache_stores_total") != 0 {
			t.Error("a mutation was cached")
		}
	})

	t.Run("BoundedInBytes", func(t *testing.T) {
		const max = 8 << 10
		ts := newEdgeServer(t, corpus(t, 200, 3), server.Config{ResponseCacheBytes: max})
		for first := 1; first <= 10; first++ {
			ts.post(t, map[string]any{"query": cacheListPage, "variables": map[string]any{"first": first}})
		}
		if got := ts.metric(t, "incidentlib_response_cache_bytes"); got > max || got == 0 {
			t.Errorf("cache holds %v bytes, bound %d", got, max)
		}
		if got := ts.metric(t, `incidentlib_response_cache_evictions_total{reason="size"}`); got == 0 {
			t.Error("no eviction at the bound")
		}
		// The most recent response is still there.
		before := ts.readTx()
		ts.post(t, map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 10}})
		if ts.readTx() != before {
			t.Error("the most recent response was evicted")
		}
	})

	t.Run("Off", func(t *testing.T) {
		ts := newEdgeServer(t, incs, server.Config{ResponseCacheBytes: -1})
		body := map[string]any{"query": cacheListPage}
		ts.post(t, body)
		before := ts.readTx()
		ts.post(t, body)
		if ts.readTx() == before {
			t.Error("a request with the cache off read nothing")
		}
		if ts.outcome(t, "off") != 2 || ts.metric(t, "incidentlib_response_cache_max_bytes") != 0 {
			t.Error("the cache is not reported off")
		}
	})

	t.Run("BatchOperationsEachCached", func(t *testing.T) {
		ts := shared
		c := ts.counters(t)
		one, _ := json.Marshal(map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 3}, "operationName": "ListPage"})
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/graphql", strings.NewReader("["+string(one)+","+string(one)+"]"))
		req.Header.Set("Content-Type", "application/json")
		r := ts.do(t, req)
		var parts []json.RawMessage
		if err := json.Unmarshal(r.Body, &parts); err != nil || len(parts) != 2 || !bytes.Equal(parts[0], parts[1]) {
			t.Fatalf("batch: %d %s", r.Status, r.Body)
		}
		if c.get(t, "hit") != 1 || c.get(t, "miss") != 1 {
			t.Errorf("the batch's operations were not each looked up")
		}
	})
}

func TestPersistedQueries(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	q := `query Titles($first: Int) { incidents(first: $first) { nodes { id title } } }`
	h := hashOf(q)
	vars := `{"first":2}`

	t.Run("UnknownHash", func(t *testing.T) {
		r := ts.get(t, url.Values{"extensions": {apqParam(h)}, "variables": {vars}})
		if r.Code() != gqledge.CodePersistedQueryNotFound {
			t.Fatalf("code %q: %s", r.Code(), r.Body)
		}
		if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("ETag") != "" {
			t.Errorf("an error was made cacheable: %v", r.Header)
		}
	})
	t.Run("HashMismatch", func(t *testing.T) {
		r := ts.post(t, map[string]any{"query": q, "extensions": apqExt(hashOf("{ __typename }"))})
		if len(r.Body) == 0 || r.Code() == "" && !bytes.Contains(r.Body, []byte("does not match")) {
			t.Fatalf("a wrong hash was accepted: %s", r.Body)
		}
	})
	var registered *rawResponse
	t.Run("RegisterByPost", func(t *testing.T) {
		registered = ts.post(t, map[string]any{"query": q, "variables": map[string]any{"first": 2}, "extensions": apqExt(h)})
		if registered.Status != 200 || registered.Code() != "" {
			t.Fatalf("register: %d %s", registered.Status, registered.Body)
		}
		if ts.metric(t, `incidentlib_apq_requests_total{outcome="register"}`) != 1 {
			t.Error("registration not counted")
		}
	})
	t.Run("GetByHashFromTheResponseCache", func(t *testing.T) {
		before := ts.readTx()
		r := ts.get(t, url.Values{"extensions": {apqParam(h)}, "variables": {vars}})
		if !bytes.Equal(r.Body, registered.Body) {
			t.Fatalf("GET by hash: %s", r.Body)
		}
		if ts.readTx() != before {
			t.Error("GET by hash read the store: it should share the POST's cache entry")
		}
	})
	t.Run("GetByHashExecutes", func(t *testing.T) {
		r := ts.get(t, url.Values{"extensions": {apqParam(h)}, "variables": {`{"first":1}`}})
		if r.Status != 200 || r.Code() != "" || !bytes.Contains(r.Body, []byte(`"nodes"`)) {
			t.Fatalf("GET by hash: %d %s", r.Status, r.Body)
		}
		if ts.metric(t, `incidentlib_apq_requests_total{outcome="hit"}`) != 1 {
			t.Error("the APQ hit was not counted")
		}
	})
}

func TestHTTPCaching(t *testing.T) {
	q := `{ incident(id: "IL-0213") { id title } }`
	incs := seedIncidents(t)
	shared := newTestServer(t, incs)
	t.Run("ETagAndNotModified", func(t *testing.T) {
		ts := newTestServer(t, incs) // it writes
		first := ts.get(t, url.Values{"query": {q}})
		etag := first.Header.Get("ETag")
		if first.Status != 200 || etag == "" || !strings.HasPrefix(etag, `"`) {
			t.Fatalf("GET: %d ETag %q", first.Status, etag)
		}
		if cc := first.Header.Get("Cache-Control"); cc != gqledge.DefaultCacheControl {
			t.Errorf("Cache-Control %q", cc)
		}
		if v := first.Header.Get("Vary"); !strings.Contains(v, "Accept-Language") {
			t.Errorf("Vary %q", v)
		}
		again := ts.get(t, url.Values{"query": {q}}, "If-None-Match", etag)
		if again.Status != http.StatusNotModified || len(again.Body) != 0 || again.Header.Get("ETag") != etag {
			t.Fatalf("If-None-Match: %d %q %s", again.Status, again.Header.Get("ETag"), again.Body)
		}
		if r := ts.get(t, url.Values{"query": {q}}, "If-None-Match", `"other", W/`+etag); r.Status != http.StatusNotModified {
			t.Errorf("a list with a weak match: %d", r.Status)
		}
		if r := ts.get(t, url.Values{"query": {q}}, "If-None-Match", etag, "Accept-Language", "ko"); r.Status != 200 || r.Header.Get("ETag") == etag {
			t.Errorf("another language matched: %d", r.Status)
		}
		changed := *incs[0]
		changed.Title.En = "Changed"
		if _, err := ts.DB.Incidents().ImportIncidents(context.Background(), []*incidentlib.Incident{&changed}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			t.Fatal(err)
		}
		after := ts.get(t, url.Values{"query": {q}}, "If-None-Match", etag)
		if after.Status != 200 || !bytes.Contains(after.Body, []byte("Changed")) || after.Header.Get("ETag") == etag {
			t.Fatalf("after a write: %d %q %s", after.Status, after.Header.Get("ETag"), after.Body)
		}
	})
	t.Run("PostHasNoValidators", func(t *testing.T) {
		ts := shared
		r := ts.post(t, map[string]any{"query": q})
		if r.Header.Get("ETag") != "" || r.Header.Get("Cache-Control") != "" {
			t.Errorf("POST: %v", r.Header)
		}
	})
	t.Run("ConfiguredCacheControlAndCacheOff", func(t *testing.T) {
		ts := newEdgeServer(t, incs, server.Config{ResponseCacheBytes: -1, CacheControl: "public, max-age=60"})
		first := ts.get(t, url.Values{"query": {q}})
		if cc := first.Header.Get("Cache-Control"); cc != "public, max-age=60" {
			t.Errorf("Cache-Control %q", cc)
		}
		// Without the response cache the response is computed, then found
		// unchanged.
		if r := ts.get(t, url.Values{"query": {q}}, "If-None-Match", first.Header.Get("ETag")); r.Status != http.StatusNotModified {
			t.Errorf("cache off: %d", r.Status)
		}
	})
	t.Run("ErrorsAreNoStore", func(t *testing.T) {
		ts := shared
		r := ts.get(t, url.Values{"query": {`{ incidents(first: 1000) { totalCount } }`}})
		if r.Header.Get("ETag") != "" || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("error GET: %v", r.Header)
		}
	})
}

func TestCacheControlValidation(t *testing.T) {
	for _, v := range []string{"no-cache", "public, max-age=0, must-revalidate", `private, no-cache="Set-Cookie"`, "s-maxage=300,stale-while-revalidate=30"} {
		if err := gqledge.ValidateCacheControl(v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
	for _, v := range []string{"", " ", "max age=3", "public;max-age=3", "no-cache\r\nX-Evil: 1", "max-age=", ","} {
		if err := gqledge.ValidateCacheControl(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

func TestTrustedDocuments(t *testing.T) {
	listed := `query Listed { incidents(first: 2) { nodes { id } } }`
	other := `query Other { incidents(first: 1) { nodes { id } } }`
	ts := newTrustedServer(t, seedIncidents(t), map[string]string{hashOf(listed): listed, "relay-id-7": `query ByRelayID { incident(id: "IL-0213") { id } }`})

	t.Run("ListedByID", func(t *testing.T) {
		r := ts.post(t, map[string]any{"extensions": apqExt(hashOf(listed))})
		if r.Status != 200 || r.Code() != "" || !bytes.Contains(r.Body, []byte(`"nodes"`)) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		g := ts.get(t, url.Values{"extensions": {apqParam("relay-id-7")}})
		if g.Status != 200 || !bytes.Contains(g.Body, []byte("IL-0213")) {
			t.Fatalf("GET by a non-SHA id: %d %s", g.Status, g.Body)
		}
	})
	t.Run("ListedByText", func(t *testing.T) {
		if r := ts.post(t, map[string]any{"query": listed}); r.Status != 200 || r.Code() != "" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("UnlistedText", func(t *testing.T) {
		r := ts.post(t, map[string]any{"query": other})
		if r.Code() != gqledge.CodeForbidden || r.Status != http.StatusBadRequest {
			t.Fatalf("%d %q %s", r.Status, r.Code(), r.Body)
		}
	})
	t.Run("UnknownID", func(t *testing.T) {
		if r := ts.post(t, map[string]any{"extensions": apqExt(hashOf(other))}); r.Code() != gqledge.CodePersistedQueryNotFound {
			t.Fatalf("%q %s", r.Code(), r.Body)
		}
	})
	t.Run("NoRegistration", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			if r := ts.post(t, map[string]any{"query": other, "extensions": apqExt(hashOf(other))}); r.Code() == "" {
				t.Fatalf("APQ registration of an unlisted document: %s", r.Body)
			}
		}
	})
	t.Run("IDWithOtherText", func(t *testing.T) {
		if r := ts.post(t, map[string]any{"query": other, "extensions": apqExt(hashOf(listed))}); r.Code() != gqledge.CodeForbidden {
			t.Fatalf("%q %s", r.Code(), r.Body)
		}
	})
	t.Run("RejectionsCounted", func(t *testing.T) {
		if ts.metric(t, `incidentlib_trusted_documents_rejected_total{code="FORBIDDEN"}`) < 2 {
			t.Error("refusals not counted")
		}
	})
}

// newTrustedServer is newEdgeServer with a manifest of trusted documents,
// loaded from a file.
func newTrustedServer(tb testing.TB, incs []*incidentlib.Incident, manifest map[string]string) *testServer {
	tb.Helper()
	mb, _ := json.Marshal(manifest)
	path := filepath.Join(tb.TempDir(), "trusted.json")
	if err := os.WriteFile(path, mb, 0o600); err != nil {
		tb.Fatal(err)
	}
	docs, err := gqledge.LoadTrustedDocuments(path)
	if err != nil {
		tb.Fatal(err)
	}
	return newEdgeServer(tb, incs, server.Config{TrustedDocuments: docs})
}

func TestTrustedDocumentsRefusedAtStart(t *testing.T) {
	good := `query Q { incidents(first: 1) { nodes { id } } }`
	apollo := `{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"` + hashOf(good) + `","name":"Q","type":"query","body":` + strconv.Quote(good) + `}]}`
	if d, err := gqledge.ParseTrustedDocuments([]byte(apollo)); err != nil || d.Len() != 1 {
		t.Fatalf("Apollo manifest: %v", err)
	}
	for name, manifest := range map[string]string{
		"NotJSON":          `{"a":`,
		"Empty":            `{}`,
		"NotAString":       `{"a": 3}`,
		"WrongSHA":         `{"` + hashOf("x") + `": ` + strconv.Quote(good) + `}`,
		"ApolloNoFormat":   `{"operations":[{"id":"a","body":"{ __typename }"}]}`,
		"ApolloNoBody":     `{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"a"}]}`,
		"ParseError":       `{"a": "query {"}`,
		"ValidationError":  `{"a": "{ incidents { nope } }"}`,
		"UnknownArgument":  `{"a": "{ incident(idd: \"x\") { id } }"}`,
		"OneOfManyBroken":  `{"a": ` + strconv.Quote(good) + `, "b": "{ nope }"}`,
		"ArrayNotAnObject": `[]`,
	} {
		t.Run(name, func(t *testing.T) {
			docs, err := gqledge.ParseTrustedDocuments([]byte(manifest))
			if err == nil {
				db := testutil.ServerStore(t, nil, storage.Options{})
				_, err = testutil.ServerOn(db, server.Config{TrustedDocuments: docs}, testutil.ServerParts{})
			}
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func mustAtoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}
