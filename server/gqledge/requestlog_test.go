package gqledge_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
)

// The request log and the request metrics through the whole handler.

// logSink is a log sink safe for the server's goroutines.
type logSink struct{ buf testutil.SyncBuffer }

func (s *logSink) Write(p []byte) (int, error) { return s.buf.Write(p) }

// requests returns the JSON log lines with msg "request".
func (s *logSink) requests(tb testing.TB) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			tb.Fatalf("a log line is not JSON: %s", line)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// waitRequests waits until n request lines were logged: the line is
// written after the response, which the client may have read already.
func (s *logSink) waitRequests(tb testing.TB, n int) []map[string]any {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.requests(tb)
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) < n {
				tb.Fatalf("%d request lines logged, want %d", len(got), n)
			}
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRequestLog(t *testing.T) {
	logs := &logSink{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := newEdgeServer(t, seedIncidents(t), server.Config{Logger: logger, LogRequests: true})
	long := `query LongOne { incidents(first: 2) { nodes { id ` + strings.Repeat("title ", 400) + `} } }`
	vars := map[string]any{"pad": strings.Repeat("x", 5000)}

	t.Run("Fields", func(t *testing.T) {
		r := ts.post(t, map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 2}}, "X-Request-Id", "client-id-42")
		if r.Header.Get("X-Request-Id") != "client-id-42" {
			t.Fatalf("X-Request-Id %q", r.Header.Get("X-Request-Id"))
		}
		ts.post(t, map[string]any{"query": cacheListPage, "variables": map[string]any{"first": 2}}, "X-Request-Id", "client-id-43")
		lines := logs.waitRequests(t, 2)
		first, second := lines[0], lines[1]
		want := map[string]any{"request_id": "client-id-42", "method": "POST", "path": "/graphql", "status": 200.0, "op": "ListPage", "cache": "miss"}
		for k, v := range want {
			if first[k] != v {
				t.Errorf("%s = %v, want %v (line %v)", k, first[k], v, first)
			}
		}
		if second["cache"] != "hit" || second["op"] != "ListPage" || second["request_id"] != "client-id-43" {
			t.Errorf("hit line: %v", second)
		}
		for _, k := range []string{"duration_ms", "bytes", "doc", "level", "time"} {
			if _, ok := first[k]; !ok {
				t.Errorf("no %s in %v", k, first)
			}
		}
		if first["level"] != "INFO" {
			t.Errorf("level %v", first["level"])
		}
		// The cost the response reports (extensions.cost) is logged, on a
		// hit too.
		var body struct {
			Extensions map[string]any `json:"extensions"`
		}
		_ = json.Unmarshal(r.Body, &body)
		if c, ok := body.Extensions["cost"]; ok {
			want := fmt.Sprint(c)
			if first["cost"] != want || second["cost"] != want {
				t.Errorf("cost %v and %v logged, the response says %v", first["cost"], second["cost"], want)
			}
		}
	})
	t.Run("InsaneRequestIDReplaced", func(t *testing.T) {
		for _, bad := range []string{strings.Repeat("a", 65), "has space", `quote"`, "semi;colon"} {
			r := ts.post(t, map[string]any{"query": `{ __typename }`}, "X-Request-Id", bad)
			if id := r.Header.Get("X-Request-Id"); !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
				t.Errorf("for %q the request id is %q", bad, id)
			}
		}
	})
	t.Run("SizesBounded", func(t *testing.T) {
		n := len(logs.requests(t))
		ts.post(t, map[string]any{"query": long, "variables": vars})
		line := logs.waitRequests(t, n+1)[n]
		b, _ := json.Marshal(line)
		if len(b) > 1200 {
			t.Errorf("a request line of %d bytes: %s", len(b), b)
		}
		q, _ := line["query"].(string)
		if q == "" || !strings.HasPrefix(long, strings.TrimSuffix(q, "…")) || len(q) > 130 {
			t.Errorf("query prefix %q", q)
		}
		v, _ := line["variables"].(string)
		if len(v) > 130 {
			t.Errorf("variables prefix of %d bytes", len(v))
		}
	})
	t.Run("ProbesAtDebug", func(t *testing.T) {
		logs2 := &logSink{}
		ts2 := newEdgeServer(t, nil, server.Config{LogRequests: true, Logger: slog.New(slog.NewJSONHandler(logs2, nil))})
		for _, p := range []string{"/healthz", "/metrics", "/readyz"} {
			resp, err := ts2.Client().Get(ts2.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		ts2.post(t, map[string]any{"query": `{ __typename }`})
		lines := logs2.waitRequests(t, 1)
		if len(lines) != 1 || lines[0]["path"] != "/graphql" {
			t.Errorf("at info level: %v", lines)
		}
		if _, ok := lines[0]["query"]; ok {
			t.Error("the query prefix is logged at info level")
		}
	})
	t.Run("OffByDefault", func(t *testing.T) {
		logs3 := &logSink{}
		ts3 := newEdgeServer(t, nil, server.Config{Logger: slog.New(slog.NewJSONHandler(logs3, nil))})
		r := ts3.post(t, map[string]any{"query": `{ __typename }`})
		if r.Header.Get("X-Request-Id") == "" {
			t.Error("no request id without request logs")
		}
		if n := len(logs3.requests(t)); n != 0 {
			t.Errorf("%d request lines without LogRequests", n)
		}
	})
}

func TestRequestMetrics(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	for i := 0; i < 3; i++ {
		ts.post(t, map[string]any{"query": cacheListPage})
	}
	if got := ts.metric(t, `incidentlib_graphql_http_request_duration_seconds_count{cache="hit",operation="ListPage"}`); got != 2 {
		t.Errorf("hits by operation %v, want 2", got)
	}
	if got := ts.metric(t, `incidentlib_graphql_http_request_duration_seconds_count{cache="miss",operation="ListPage"}`); got != 1 {
		t.Errorf("misses by operation %v, want 1", got)
	}
}
