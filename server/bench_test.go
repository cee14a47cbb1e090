package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// The queries of `go run ./cmd/incidentlib-bench graphql`, for profiling
// the handler without the network, with serve's GC budget (set GOGC to
// try another):
//
//	go test -run '^$' -bench . -benchmem -cpuprofile cpu.out ./server
const (
	benchListQuery     = `query ListPage($first: Int) { incidents(first: $first) { nodes { id title organization { name incidentCount } symptoms { label } components { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id } } } }`
	benchIncidentQuery = `query IncidentPage($id: ID!) { incident(id: $id) { id title summary date organization { name incidentCount } domains { label } symptoms { label } components { label } rootCause { label } severity { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id title } } }`
)

var benchFixture struct {
	once sync.Once
	srv  *server.Server
	db   *storage.DB
	id   string
	err  error
}

// benchServer is the handler over a generated 10,000-incident store, built
// once per test binary. The store's file is unlinked as soon as it is open
// (bbolt keeps it mapped), so nothing is left behind.
func benchServer(b *testing.B) (*server.Server, string) {
	b.Helper()
	f := &benchFixture
	f.once.Do(func() {
		dir, err := os.MkdirTemp("", "incidentlib-bench-")
		if err != nil {
			f.err = err
			return
		}
		defer os.RemoveAll(dir)
		tax := seeds.MustTaxonomy()
		db, err := storage.Open(filepath.Join(dir, "bench.db"), storage.Options{Taxonomy: tax, RecordCache: 10_000, NoSync: true})
		if err != nil {
			f.err = err
			return
		}
		incs, err := gen.Generate(gen.Options{Count: 10_000, Seed: 1, Taxonomy: tax})
		if err != nil {
			f.err = err
			return
		}
		if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			f.err = err
			return
		}
		f.id = benchRichIncident(incs)
		// Every record decoded in the record cache, as in a server that
		// has run for a while (the live heap sets how often the
		// collector runs).
		ids := make([]string, len(incs))
		for i, inc := range incs {
			ids[i] = inc.ID
		}
		if _, err := db.Incidents().FindIncidentsByIDs(context.Background(), ids); err != nil {
			f.err = err
			return
		}
		f.srv, f.err = testutil.ServerOn(db, server.Config{Prod: true, ResponseCacheBytes: -1}, testutil.ServerParts{})
		f.db = db
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f.srv, f.id
}

// discardWriter is a ResponseWriter that keeps only the last body, so the
// benchmark counts the handler's allocations, not a recorder's.
type discardWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { return w.body.Write(p) }

func benchPost(b *testing.B, query string, vars map[string]any, parallel bool) {
	srv, _ := benchServer(b)
	if os.Getenv("GOGC") == "" { // serve's garbage collector budget unless GOGC says otherwise
		defer debug.SetGCPercent(debug.SetGCPercent(server.DefaultGCPercent))
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		b.Fatal(err)
	}
	do := func(w *discardWriter) {
		clear(w.h)
		w.code = http.StatusOK
		w.body.Reset()
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(w, req)
		if w.code != http.StatusOK || !bytes.HasPrefix(w.body.Bytes(), []byte(`{"data":`)) || bytes.Contains(w.body.Bytes(), []byte(`"errors"`)) {
			b.Fatalf("status %d: %.300s", w.code, w.body.Bytes())
		}
	}
	w := &discardWriter{h: http.Header{}}
	do(w)
	b.SetBytes(int64(w.body.Len()))
	b.ReportAllocs()
	// cpu-ns/op is the CPU time of the whole process (the executor's
	// goroutines and the garbage collector included) per request: on a
	// busy machine it moves far less than ns/op.
	cpu0 := processCPU()
	b.ResetTimer()
	if !parallel {
		for b.Loop() {
			do(w)
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			w := &discardWriter{h: http.Header{}}
			for pb.Next() {
				do(w)
			}
		})
	}
	b.StopTimer()
	if cpu := processCPU(); cpu > 0 {
		b.ReportMetric(float64(cpu-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkListPage(b *testing.B) {
	benchPost(b, benchListQuery, map[string]any{"first": 20}, false)
}

func BenchmarkListPage100(b *testing.B) {
	benchPost(b, benchListQuery, map[string]any{"first": 100}, false)
}

func BenchmarkListPageParallel(b *testing.B) {
	benchPost(b, benchListQuery, map[string]any{"first": 20}, true)
}

func BenchmarkIncidentPage(b *testing.B) {
	_, id := benchServer(b)
	benchPost(b, benchIncidentQuery, map[string]any{"id": id}, false)
}

// benchRichIncident is the first incident with related incidents, a
// recurrence_of link and recurrences of its own, as the harness picks it.
func benchRichIncident(incs []*incidentlib.Incident) string {
	hasRecs := map[string]bool{}
	for _, inc := range incs {
		hasRecs[inc.RecurrenceOf] = true
	}
	for _, inc := range incs {
		if len(inc.Related) > 0 && inc.RecurrenceOf != "" && hasRecs[inc.ID] {
			return inc.ID
		}
	}
	return incs[0].ID
}
