package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// Cache hits of the list page, through the whole handler as serve builds
// it (prod mode, a JSON request log line per request, thrown away), without
// the network, for profiling the hit path:
//
//	go test -run '^$' -bench CacheHit -benchmem -cpuprofile cpu.out ./server
//	go tool pprof -top cpu.out

var cacheHitFixture struct {
	once sync.Once
	srv  *server.Server
	err  error
}

func cacheHitServer(b *testing.B) *server.Server {
	b.Helper()
	benchServer(b)
	db := benchFixture.db
	f := &cacheHitFixture
	f.once.Do(func() {
		logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
		f.srv, f.err = testutil.ServerOn(db, server.Config{Prod: true, Logger: logger, LogRequests: true}, testutil.ServerParts{})
		if f.srv != nil {
			f.srv.SetReady(true)
		}
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f.srv
}

func benchCacheHit(b *testing.B, newReq func() *http.Request) {
	srv := cacheHitServer(b)
	do := func(w *discardWriter) {
		clear(w.h)
		w.code = http.StatusOK
		w.body.Reset()
		srv.ServeHTTP(w, newReq())
		if w.code != http.StatusOK || !bytes.HasPrefix(w.body.Bytes(), []byte(`{"data":`)) {
			b.Fatalf("status %d: %.300s", w.code, w.body.Bytes())
		}
	}
	w := &discardWriter{h: http.Header{}}
	do(w) // computes and stores the page
	hits := cacheHits(srv)
	b.SetBytes(int64(w.body.Len()))
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			do(w)
		}
	})
	b.StopTimer()
	if got := cacheHits(srv) - hits; got < float64(b.N) {
		b.Fatalf("%v of %d requests were cache hits", got, b.N)
	}
	if cpu := processCPU(); cpu > 0 {
		b.ReportMetric(float64(cpu-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// cacheHits reads the response cache's hit counter.
func cacheHits(s *server.Server) float64 {
	fams, _ := s.Metrics.Gatherer().Gather()
	for _, f := range fams {
		if f.GetName() != "incidentlib_response_cache_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == "hit" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func BenchmarkCacheHitPost(b *testing.B) {
	body, _ := json.Marshal(map[string]any{"query": benchListQuery, "variables": map[string]any{"first": 20}})
	benchCacheHit(b, func() *http.Request {
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return req
	})
}

func BenchmarkCacheHitPersistedGet(b *testing.B) {
	srv := cacheHitServer(b)
	vars := map[string]any{"first": 20}
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": gqledge.DocumentHash(benchListQuery)}}
	// Register the hash once, as an APQ client does.
	reg, _ := json.Marshal(map[string]any{"query": benchListQuery, "variables": vars, "extensions": ext})
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(reg))
	req.Header.Set("Content-Type", "application/json")
	srv.ServeHTTP(httptest.NewRecorder(), req)
	varsJSON, _ := json.Marshal(vars)
	extJSON, _ := json.Marshal(ext)
	target := "/graphql?" + url.Values{"extensions": {string(extJSON)}, "variables": {string(varsJSON)}}.Encode()
	benchCacheHit(b, func() *http.Request {
		return httptest.NewRequest(http.MethodGet, target, nil)
	})
}
