package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// A server that counts its work, for the tests of what a request must not
// cost (the edge's refusals, the roles' guard): the real handler over a
// real store, counting resolver calls and logging JSON to a buffer.

// FieldCounter counts resolver calls: every field gqlgen resolves.
type FieldCounter struct{ n atomic.Int64 }

func (*FieldCounter) ExtensionName() string                   { return "FieldCounter" }
func (*FieldCounter) Validate(graphql.ExecutableSchema) error { return nil }
func (c *FieldCounter) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	c.n.Add(1)
	return next(ctx)
}

// N is how many fields were resolved.
func (c *FieldCounter) N() int64 { return c.n.Load() }

// CountingServer is the real handler over a store of incidents (record
// cache of 20,000), built with cfg, a resolver counter and, unless cfg has
// a logger, a JSON log into Log.
type CountingServer struct {
	*httptest.Server
	DB     *storage.DB
	Srv    *server.Server
	Fields *FieldCounter
	Log    *SyncBuffer
}

// SyncBuffer is a buffer safe for the server's goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// NewCountingServer serves incs with cfg until the test ends.
func NewCountingServer(tb testing.TB, incs []*incidentlib.Incident, cfg server.Config) *CountingServer {
	tb.Helper()
	db := ServerStore(tb, incs, storage.Options{RecordCache: 20000})
	hs := &CountingServer{DB: db, Fields: &FieldCounter{}, Log: &SyncBuffer{}}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(hs.Log, nil))
	}
	cfg.Extensions = append(cfg.Extensions, hs.Fields)
	hs.Server, hs.Srv = ServerTest(tb, db, cfg, ServerParts{})
	return hs
}

// Work is what the server did: resolver calls and bbolt read transactions.
type Work struct{ Fields, Tx int64 }

// Work is what the server did so far.
func (hs *CountingServer) Work() Work {
	return Work{hs.Fields.N(), int64(hs.DB.Maintenance().StoreStats().ReadTxTotal)}
}

// GQLError is one error of a GraphQL response.
type GQLError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// GQLResult is a GraphQL response's data and errors.
type GQLResult struct {
	Data   json.RawMessage `json:"data"`
	Errors []GQLError      `json:"errors"`
}

// Code is the code of the first error, "" without errors.
func (r *GQLResult) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// Reply is one HTTP answer, decoded when it is JSON.
type Reply struct {
	Status int
	Header http.Header
	Raw    []byte
	GQLResult
}

// Do sends req and reads the answer.
func (hs *CountingServer) Do(tb testing.TB, req *http.Request) *Reply {
	tb.Helper()
	resp, err := hs.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body) // what came before a cut is the answer
	out := &Reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") && len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out.GQLResult); err != nil {
			tb.Fatalf("response is not JSON (%d): %.300s", resp.StatusCode, raw)
		}
	}
	return out
}

// PostBody posts body to /graphql, asking for the statuses of the
// GraphQL-over-HTTP media type unless headers (name, value pairs) ask for
// another.
func (hs *CountingServer) PostBody(tb testing.TB, body []byte, headers ...string) *Reply {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return hs.Do(tb, req)
}

// Post posts the document q with vars.
func (hs *CountingServer) Post(tb testing.TB, q string, vars map[string]any, headers ...string) *Reply {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	return hs.PostBody(tb, body, headers...)
}

// Get sends the document q by GET.
func (hs *CountingServer) Get(tb testing.TB, q string, headers ...string) *Reply {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/graphql?"+url.Values{"query": {q}}.Encode(), nil)
	req.Header.Set("Accept", "application/graphql-response+json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return hs.Do(tb, req)
}

// Ext is the first error's extension key, nil without errors.
func (r *Reply) Ext(key string) any {
	if len(r.Errors) == 0 {
		return nil
	}
	return r.Errors[0].Extensions[key]
}

// Cost is extensions.cost of the response, -1 when it has none.
func (r *Reply) Cost() int {
	var v struct {
		Extensions struct{ Cost *int }
	}
	if json.Unmarshal(r.Raw, &v) != nil || v.Extensions.Cost == nil {
		return -1
	}
	return *v.Extensions.Cost
}
