package outbound

import (
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// testServer is a real loopback HTTP server that counts accepted TCP
// connections (listener wrapper), connections open at once (ConnState) and
// handler invocations.
type testServer struct {
	*httptest.Server
	accepted atomic.Int64 // TCP connections accepted by the listener
	open     atomic.Int64 // connections currently open (ConnState)
	maxOpen  atomic.Int64 // most connections open at once
	hits     atomic.Int64 // requests that reached the handler
}

// countingListener counts every accepted TCP connection.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func newTestServer(t testing.TB, h http.HandlerFunc) *testServer {
	t.Helper()
	ts := &testServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.hits.Add(1)
		h(w, r)
	}))
	srv.Listener = &countingListener{Listener: srv.Listener, n: &ts.accepted}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := ts.open.Add(1)
			for {
				m := ts.maxOpen.Load()
				if n <= m || ts.maxOpen.CompareAndSwap(m, n) {
					break
				}
			}
		case http.StateClosed, http.StateHijacked:
			ts.open.Add(-1)
		}
	}
	srv.Start()
	ts.Server = srv
	return ts
}

// testConfig is DefaultConfig with fast backoff for tests.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.BackoffBase = time.Millisecond
	cfg.BackoffCap = 10 * time.Millisecond
	return cfg
}

func newTestClient(t testing.TB, cfg Config) (*Client, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := New(cfg, reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, reg
}

// goroutineGuard records the goroutine count now and, at cleanup (after the
// cleanups registered later, i.e. after clients and servers are closed),
// waits a bounded time for it to return to that baseline.
func goroutineGuard(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= base {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d goroutines, baseline %d\n%s", n, base, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// metricValue returns the value of the counter/gauge name with exactly the
// given labels, or -1 if absent.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return valueOf(m)
		}
	}
	return -1
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

// hostOf returns the scheme://host:port key of a test server.
func hostOf(srv *testServer) string {
	return strings.ToLower(srv.URL) // httptest URLs are http://127.0.0.1:port
}
