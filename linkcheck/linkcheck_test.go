package linkcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/linkcheck"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// site is a loopback web site that counts accepted connections and the
// requests in flight at once.
type site struct {
	*httptest.Server
	accepted    atomic.Int64
	inflight    atomic.Int64
	maxInflight atomic.Int64
	heads, gets atomic.Int64
}

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

func newSite(t *testing.T, mux *http.ServeMux) *site {
	t.Helper()
	s := &site{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for m := s.maxInflight.Load(); n > m && !s.maxInflight.CompareAndSwap(m, n); m = s.maxInflight.Load() {
		}
		if r.Method == http.MethodHead {
			s.heads.Add(1)
		} else {
			s.gets.Add(1)
		}
		mux.ServeHTTP(w, r)
	}))
	srv.Listener = &countingListener{Listener: srv.Listener, n: &s.accepted}
	srv.Start()
	t.Cleanup(srv.Close)
	s.Server = srv
	return s
}

func goroutineGuard(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d goroutines, baseline %d\n%s", runtime.NumGoroutine(), base, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// newChecker builds a checker with short backoffs whose connections
// never leave loopback, whatever its address policy says (a test of a
// broken policy must not send anything to 169.254.169.254 or 10.0.0.7).
// The loopback sites of these tests stand for the outside world: they set
// cfg.AllowPrivate or cfg.Reachable.
func newChecker(t *testing.T, cfg linkcheck.Config) *linkcheck.Checker {
	t.Helper()
	if cfg.Connect == nil {
		cfg.Connect = loopbackOnly(t, nil)
	}
	oc := linkcheck.ClientConfig(cfg)
	oc.BackoffBase, oc.BackoffCap = time.Millisecond, 5*time.Millisecond
	c, err := linkcheck.New(oc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// loopbackOnly connects to loopback addresses only, counting the
// connections in n (if set); any other address fails the test and is not
// dialled.
func loopbackOnly(t *testing.T, n *atomic.Int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the checker dialled %q", addr)
			return nil, errors.New("test: not a loopback address")
		}
		if n != nil {
			n.Add(1)
		}
		return d.DialContext(ctx, network, addr)
	}
}

func TestRunRecordsEverySource(t *testing.T) {
	goroutineGuard(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "here") })
	mux.HandleFunc("/gone", http.NotFound)
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/hop", http.StatusMovedPermanently) })
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/no-head", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		io.WriteString(w, strings.Repeat("a long page ", 1000))
	})
	mux.HandleFunc("/head-not-implemented", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
		}
	})
	a := newSite(t, mux)
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/nobody"
	ln.Close()

	want := map[string]incidentlib.SourceCheck{
		a.URL + "/ok":                   {Status: 200, FinalURL: a.URL + "/ok"},
		a.URL + "/gone":                 {Status: 404, FinalURL: a.URL + "/gone"},
		a.URL + "/old":                  {Status: 200, FinalURL: a.URL + "/ok"},
		a.URL + "/no-head":              {Status: 200, FinalURL: a.URL + "/no-head"},
		a.URL + "/head-not-implemented": {Status: 204, FinalURL: a.URL + "/head-not-implemented"},
		a.URL + "/broken":               {Status: 500, FinalURL: a.URL + "/broken"},
		a.URL + "/reset":                {Status: 0, Error: "connection reset"},
		closed:                          {Status: 0, Error: "connection refused"},
	}
	var incs []*incidentlib.Incident
	n := 0
	for u := range want {
		n++
		incs = append(incs, &incidentlib.Incident{ID: incidentlib.FormatID(uint32(n)), Org: "Org", OrgSlug: "org",
			Title: incidentlib.Text{En: "Incident"}, Sources: []incidentlib.Source{{URL: u, Kind: "blog"}, {URL: a.URL + "/ok"}},
			UpdatedAt: "2026-01-02T03:04:05Z"})
	}
	db, err := storage.Open(filepath.Join(t.TempDir(), "lc.db"), storage.Options{Taxonomy: seeds.MustTaxonomy(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cfg := linkcheck.DefaultConfig()
	cfg.PerHost, cfg.Timeout, cfg.WriteBatch = 2, 5*time.Second, 3
	cfg.Now = func() time.Time { return now }
	cfg.AllowPrivate = true
	c := newChecker(t, cfg)
	sum, err := c.Run(ctx, db.Incidents())
	if err != nil {
		t.Fatal(err)
	}
	if sum.URLs != len(want) || sum.OK != 4 || sum.Redirected != 1 || sum.ClientErrors != 1 || sum.ServerErrors != 1 || sum.NoResponse != 2 || sum.IncidentsWritten < len(incs) {
		t.Fatalf("summary %s", sum)
	}
	found, err := db.Incidents().FindIncidentsByIDs(ctx, idsOf(incs))
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range found {
		if inc.UpdatedAt != "2026-01-02T03:04:05Z" {
			t.Fatalf("%s: the link check stamped updated_at %s", inc.ID, inc.UpdatedAt)
		}
		for _, s := range inc.Sources {
			got, ok := s.Check()
			w := want[s.URL]
			w.CheckedAt = "2026-11-30T12:00:00Z"
			if !ok || got != w {
				t.Errorf("%s: %+v, want %+v", s.URL, got, w)
			}
		}
	}
	if a.maxInflight.Load() > 2 {
		t.Fatalf("%d checks at once on one host, per-host limit 2", a.maxInflight.Load())
	}
	if a.gets.Load() < 2 {
		t.Fatalf("HEAD answered 405 and 501 but only %d GETs followed", a.gets.Load())
	}

	t.Run("GraphQL", func(t *testing.T) {
		srv, err := testutil.ServerOn(db, server.Config{}, testutil.ServerParts{})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		body, _ := json.Marshal(map[string]string{"query": `{ incident(id: "IL-0001") { sources { url status checkedAt finalUrl } } }`})
		resp, err := ts.Client().Post(ts.URL+"/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Data struct {
				Incident struct {
					Sources []struct {
						URL       string
						Status    *int
						CheckedAt *string
						FinalURL  *string `json:"finalUrl"`
					}
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		for _, s := range out.Data.Incident.Sources {
			w := want[s.URL]
			if s.Status == nil || *s.Status != w.Status || s.CheckedAt == nil || *s.CheckedAt != "2026-11-30T12:00:00Z" || (w.FinalURL != "" && (s.FinalURL == nil || *s.FinalURL != w.FinalURL)) {
				t.Fatalf("GraphQL source %+v, want %+v", s, w)
			}
		}
	})
}

func idsOf(incs []*incidentlib.Incident) []string {
	out := make([]string, len(incs))
	for i, inc := range incs {
		out[i] = inc.ID
	}
	return out
}

func TestCheckKeepsPerHostLimitAndReusesConnections(t *testing.T) {
	goroutineGuard(t)
	release := make(chan struct{})
	var once sync.Once
	slow := http.NewServeMux()
	slow.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Hold the first checks until several are waiting, so the limit
		// is what keeps them apart.
		select {
		case <-release:
		case <-time.After(50 * time.Millisecond):
		}
	})
	a, b := newSite(t, slow), newSite(t, slow)
	var urls []string
	for i := range 40 {
		for _, s := range []*site{a, b} {
			urls = append(urls, s.URL+"/page/"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		}
	}
	cfg := linkcheck.DefaultConfig()
	cfg.PerHost, cfg.Concurrency = 3, 16
	cfg.AllowPrivate = true
	c := newChecker(t, cfg)
	var results []linkcheck.Result
	c.Check(context.Background(), urls, func(r linkcheck.Result) {
		once.Do(func() { close(release) })
		results = append(results, r)
	})
	if len(results) != len(urls) {
		t.Fatalf("%d results for %d URLs", len(results), len(urls))
	}
	for _, r := range results {
		if r.Status != 200 || r.Skipped {
			t.Fatalf("result %+v", r)
		}
	}
	for name, s := range map[string]*site{"a": a, "b": b} {
		if m := s.maxInflight.Load(); m > 3 {
			t.Fatalf("host %s: %d checks at once, limit 3", name, m)
		}
		if n := s.accepted.Load(); n > 3 {
			t.Fatalf("host %s: %d connections for 40 checks, pool of 3", name, n)
		}
	}
	if st := c.Stats(); st.ReusedConns < uint64(len(urls)-6) {
		t.Fatalf("only %d of %d requests reused a connection", st.ReusedConns, len(urls))
	}
}

func TestCheckCancelled(t *testing.T) {
	goroutineGuard(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {})
	a := newSite(t, mux)
	cfg := linkcheck.DefaultConfig()
	cfg.AllowPrivate = true
	c := newChecker(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	skipped := 0
	c.Check(ctx, []string{a.URL + "/1", a.URL + "/2", a.URL + "/3"}, func(r linkcheck.Result) {
		if r.Skipped {
			skipped++
		}
	})
	if skipped != 3 || a.heads.Load() != 0 {
		t.Fatalf("a cancelled check made %d requests and skipped %d of 3", a.heads.Load(), skipped)
	}
}

func TestConfigRefused(t *testing.T) {
	for name, tweak := range map[string]func(*linkcheck.Config){
		"ErrPerHostZero":      func(c *linkcheck.Config) { c.PerHost = 0 },
		"ErrPerHostTooMany":   func(c *linkcheck.Config) { c.PerHost = 65 },
		"ErrConcurrencyZero":  func(c *linkcheck.Config) { c.Concurrency = 0 },
		"ErrTimeoutZero":      func(c *linkcheck.Config) { c.Timeout = 0 },
		"ErrWriteBatchZero":   func(c *linkcheck.Config) { c.WriteBatch = 0 },
		"ErrConcurrencyLarge": func(c *linkcheck.Config) { c.Concurrency = 2000 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := linkcheck.DefaultConfig()
			tweak(&cfg)
			if _, err := linkcheck.New(linkcheck.ClientConfig(linkcheck.DefaultConfig()), cfg); err == nil {
				t.Fatalf("%+v accepted", cfg)
			}
		})
	}
}
