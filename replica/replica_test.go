package replica_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/replica"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// countingServer is a real loopback HTTP server that counts the TCP
// connections it accepts.
type countingServer struct {
	*httptest.Server
	accepted atomic.Int64
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

func newCountingServer(tb testing.TB, h http.Handler) *countingServer {
	tb.Helper()
	cs := &countingServer{}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = &countingListener{Listener: srv.Listener, n: &cs.accepted}
	srv.Start()
	cs.Server = srv
	tb.Cleanup(srv.Close)
	return cs
}

func openStore(tb testing.TB, path string) *storage.DB {
	tb.Helper()
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 20_000, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// primary is a library with n generated incidents, served by the real
// handler.
type primary struct {
	db  *storage.DB
	srv *server.Server
}

func newPrimary(tb testing.TB, n int) *primary {
	tb.Helper()
	db := openStore(tb, filepath.Join(tb.TempDir(), "primary.db"))
	tb.Cleanup(func() { db.Close() })
	incs, err := gen.Generate(gen.Options{Count: n, Seed: 42, FirstID: 1, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		tb.Fatal(err)
	}
	srv, err := testutil.ServerOn(db, server.Config{}, testutil.ServerParts{})
	if err != nil {
		tb.Fatal(err)
	}
	srv.SetReady(true)
	return &primary{db, srv}
}

// testClientConfig is the production outbound configuration with a fast
// backoff and a breaker that opens after a few failures.
func testClientConfig() outbound.Config {
	cfg := outbound.DefaultConfig()
	cfg.BackoffBase, cfg.BackoffCap = time.Millisecond, 20*time.Millisecond
	cfg.BreakerMinRequests, cfg.BreakerOpenTimeout = 5, 200*time.Millisecond
	cfg.RetryBudgetMinPerSecond = 1
	return cfg
}

// follower runs a follower of url over db until the test ends or stop is
// called.
type follower struct {
	*replica.Follower
	client *outbound.Client
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

func startFollower(tb testing.TB, db *storage.DB, url string, tweak func(*replica.Config)) *follower {
	tb.Helper()
	return startFollowerClient(tb, db, url, testClientConfig(), tweak)
}

func startFollowerClient(tb testing.TB, db *storage.DB, url string, ccfg outbound.Config, tweak func(*replica.Config)) *follower {
	tb.Helper()
	reg := prometheus.NewRegistry()
	client, err := outbound.New(ccfg, reg)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := replica.DefaultConfig(url)
	cfg.Interval = 10 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	f, err := replica.New(context.Background(), db.Follower(), client, cfg, reg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fl := &follower{Follower: f, client: client, reg: reg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		_ = f.Run(ctx)
	}()
	tb.Cleanup(fl.stop)
	return fl
}

func (f *follower) stop() {
	f.cancel()
	<-f.done
	f.client.Close()
}

// waitLevel waits, at most a minute, for the follower to apply the
// primary's changes up to seq.
func (f *follower) waitSeq(tb testing.TB, seq uint64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.WaitSeq(ctx, seq); err != nil {
		tb.Fatalf("the follower did not reach %d: %v (status %+v)", seq, err, f.Status())
	}
}

func (f *follower) metric(tb testing.TB, name string) float64 {
	tb.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			return valueOf(m)
		}
	}
	tb.Fatalf("no metric %s", name)
	return 0
}

func valueOf(m *dto.Metric) float64 {
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetCounter().GetValue()
}

func exportOf(tb testing.TB, db *storage.DB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := db.Maintenance().Export(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func sameLibrary(tb testing.TB, p, r *storage.DB) {
	tb.Helper()
	a, b := exportOf(tb, p), exportOf(tb, r)
	if !bytes.Equal(a, b) {
		tb.Fatalf("the replica's export (%d bytes) differs from the primary's (%d bytes)", len(b), len(a))
	}
	problems, err := r.Maintenance().Check(context.Background())
	if err != nil || len(problems) > 0 {
		tb.Fatalf("check of the replica: %v %v", err, problems)
	}
}

// goroutineGuard fails the test if, after every later cleanup, the
// goroutines do not return to the number running now (within 5s).
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

func TestFollowerReplicatesOverAHandfulOfConnections(t *testing.T) {
	n := 10_000
	if raceEnabled || testing.Short() {
		// The race detector makes JSON about fifteen times slower; the
		// number of connections does not depend on n (make bench
		// replicates 100,000 without it).
		n = 2_000
	}
	p := newPrimary(t, n)
	var requests atomic.Int64
	ts := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		p.srv.ServeHTTP(w, r)
	}))
	db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { db.Close() })
	f := startFollower(t, db, ts.URL, func(c *replica.Config) { c.Wait = 10 * time.Second })
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, db)
	pages := int64(n/replica.MaxPageSize + 1)
	if got := ts.accepted.Load(); got > 2 {
		t.Fatalf("replicating %d incidents in %d requests opened %d connections", n, requests.Load(), got)
	}
	if st := f.client.Stats(); st.NewConns > 2 || st.ReusedConns < uint64(pages-2) {
		t.Fatalf("outbound: %d new connections, %d reused, for %d pages", st.NewConns, st.ReusedConns, pages)
	}

	// Live: edits and deletes arrive through long polls on the same
	// connection.
	ctx := context.Background()
	for i := range 5 {
		recs, err := p.db.Incidents().FindIncidentsByIDs(ctx, []string{incidentlib.FormatID(uint32(100 + i))})
		if err != nil {
			t.Fatal(err)
		}
		e := *recs[0]
		e.Title.En = "Edited " + strconv.Itoa(i)
		e.Review.ReviewedAt, e.Review.ReviewedBy = "", ""
		if _, err := p.db.Incidents().UpsertIncident(ctx, &e, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.db.Incidents().DeleteIncident(ctx, "IL-0007", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, db)
	if got := ts.accepted.Load(); got > 2 {
		t.Fatalf("following live changes opened %d connections in all", got)
	}
	if got := f.metric(t, "incidentlib_follow_seq"); got != float64(p.db.Incidents().Seq()) {
		t.Fatalf("incidentlib_follow_seq %v, want %d", got, p.db.Incidents().Seq())
	}
	if got := f.metric(t, "incidentlib_follow_lag_seconds"); got != 0 {
		t.Fatalf("incidentlib_follow_lag_seconds %v while level", got)
	}
	// Long polls answered with changes committed during the wait carry
	// the page's sequence in a trailer: none was refused.
	if got := f.metric(t, "incidentlib_follow_errors_total"); got != 0 {
		t.Fatalf("%v polls failed following a well-behaved primary", got)
	}
	t.Logf("%d incidents, %d requests, %d connections accepted", n, requests.Load(), ts.accepted.Load())
}

// cutter serves the primary's feed, but cuts chosen answers off mid-body,
// and records the since of every feed request.
type cutter struct {
	p     *primary
	mu    sync.Mutex
	since []uint64 // of every feed request, in order
	cut   map[int]bool
	hold  chan struct{} // if set, a cut answer waits on it before the cut
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s, _ := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	c.mu.Lock()
	c.since = append(c.since, s)
	n := len(c.since)
	cut, hold := c.cut[n], c.hold
	c.mu.Unlock()
	if !cut {
		c.p.srv.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	c.p.srv.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}
	panic(http.ErrAbortHandler) // the connection is closed mid-body
}

func (c *cutter) requests() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]uint64(nil), c.since...)
}

// A follower whose page is cut off mid-body applies nothing of it and asks
// again from the same position; a follower killed while reading a page
// resumes, after a restart, from its saved position. The replica ends
// identical to the primary, every page applied once.
func TestFollowerResumesWithoutGapsOrDuplicates(t *testing.T) {
	goroutineGuard(t)
	p := newPrimary(t, 1_000)
	c := &cutter{p: p, cut: map[int]bool{2: true, 4: true, 5: true, 8: true}, hold: make(chan struct{})}
	close(c.hold) // the first cuts are immediate
	ts := newCountingServer(t, c)
	path := filepath.Join(t.TempDir(), "replica.db")
	db := openStore(t, path)
	page := func(cfg *replica.Config) { cfg.PageSize = 100; cfg.Wait = 0 }
	f := startFollower(t, db, ts.URL, page)
	f.waitSeq(t, 300)
	f.stop()

	// Kill the next follower while it reads a page: the answer is held
	// half sent until the follower is gone.
	c.mu.Lock()
	c.hold = make(chan struct{})
	c.cut = map[int]bool{len(c.since) + 2: true}
	held := len(c.since) + 2
	c.mu.Unlock()
	f2 := startFollower(t, db, ts.URL, page)
	for i := 0; len(c.requests()) < held; i++ {
		if i > 6000 {
			t.Fatal("the follower did not get to the held page")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f2.stop()
	// Read once the follower has stopped: it may have been applying the
	// page before the held one when the held request went out.
	pos, _, _ := db.Incidents().AppliedSeq(context.Background())
	close(c.hold)
	db.Close()

	// Restart on the same file: it resumes from the saved position.
	db = openStore(t, path)
	t.Cleanup(func() { db.Close() })
	if got, _, _ := db.Incidents().AppliedSeq(context.Background()); got != pos {
		t.Fatalf("position after restart %d, want %d", got, pos)
	}
	before := len(c.requests())
	f3 := startFollower(t, db, ts.URL, page)
	f3.waitSeq(t, p.db.Incidents().Seq())
	if first := c.requests()[before]; first != pos {
		t.Fatalf("the restarted follower asked for changes after %d, not its saved position %d", first, pos)
	}
	sameLibrary(t, p.db, db)

	// Every page was applied whole and once: a replayed or skipped page
	// would have been refused (ApplyChanges checks that each page follows
	// on from the saved position) or left the exports different. Every
	// request asked from a page boundary: nothing was applied in part.
	for _, since := range c.requests() {
		if since%100 != 0 {
			t.Fatalf("a request asked for changes after %d: a page was applied in part", since)
		}
	}
	if st := f.Status(); st.Applied == 0 {
		t.Fatal("the first follower applied nothing")
	}
	f3.stop()
}

func TestFollowerSurvivesAFailingPrimary(t *testing.T) {
	faults := map[string]http.HandlerFunc{
		"Hangs": func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		},
		"Answers500": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		},
		"ResetsConnections": func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // RST, not FIN
				}
				conn.Close()
			}
		},
		"RetryAfter3600": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			http.Error(w, "come back in an hour", http.StatusServiceUnavailable)
		},
	}
	p := newPrimary(t, 100)
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			goroutineGuard(t)
			var failing atomic.Bool
			var hits atomic.Int64
			failing.Store(true)
			ts := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if failing.Load() {
					hits.Add(1)
					fault(w, r)
					return
				}
				p.srv.ServeHTTP(w, r)
			}))
			db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
			t.Cleanup(func() { db.Close() })
			start := time.Now()
			f := startFollower(t, db, ts.URL, func(c *replica.Config) { c.PageTimeout, c.PageSize = time.Second, 20 })
			// The breaker opens: polls then fail fast without reaching
			// the primary.
			for i := 0; f.client.Stats().BreakerRejections == 0; i++ {
				if i > 3000 {
					t.Fatalf("the breaker never opened: %+v", f.client.Stats())
				}
				time.Sleep(10 * time.Millisecond)
			}
			st := f.client.Stats()
			cfg := testClientConfig()
			// The retry budget holds: retries are at most the ratio of the
			// requests plus the minimum allowance of each window begun.
			windows := uint64(time.Since(start)/cfg.RetryBudgetWindow) + 1
			if limit := uint64(cfg.RetryBudgetRatio*float64(st.Requests)) + windows*uint64(cfg.RetryBudgetMinPerSecond)*uint64(cfg.RetryBudgetWindow/time.Second) + 1; st.Retries > limit {
				t.Fatalf("%d retries for %d requests, over the budget of %d", st.Retries, st.Requests, limit)
			}
			if uint64(hits.Load()) > st.Attempts {
				t.Fatalf("%d hits for %d attempts past the breaker", hits.Load(), st.Attempts)
			}
			if name == "RetryAfter3600" && (st.RetryAfterTooLong == 0 || st.Retries != 0) {
				t.Fatalf("Retry-After: 3600 was not given back at once: %+v", st)
			}
			if f.Status().Level || f.Status().Seq != 0 {
				t.Fatalf("a follower of a failing primary claims %+v", f.Status())
			}
			if got := f.metric(t, "incidentlib_follow_errors_total"); got == 0 {
				t.Fatal("no follow errors counted")
			}
			// The primary recovers; the follower catches up.
			failing.Store(false)
			f.waitSeq(t, p.db.Incidents().Seq())
			sameLibrary(t, p.db, db)
			f.stop()
		})
	}
}

func TestNewRefuses(t *testing.T) {
	client, err := outbound.New(testClientConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	empty := openStore(t, filepath.Join(t.TempDir(), "empty.db"))
	t.Cleanup(func() { empty.Close() })
	t.Run("ErrStoreOfItsOwn", func(t *testing.T) {
		p := newPrimary(t, 3)
		_, err := replica.New(context.Background(), p.db.Follower(), client, replica.DefaultConfig("http://127.0.0.1:1"), nil)
		if !errors.Is(err, replica.ErrNotReplica) {
			t.Fatalf("a store with incidents of its own was accepted: %v", err)
		}
	})
	for name, tweak := range map[string]func(*replica.Config){
		"ErrPrimaryNotAURL":   func(c *replica.Config) { c.Primary = "primary:8080" },
		"ErrPrimaryWithQuery": func(c *replica.Config) { c.Primary = "http://primary:8080/?x=1" },
		"ErrIntervalZero":     func(c *replica.Config) { c.Interval = 0 },
		"ErrIntervalTooLong":  func(c *replica.Config) { c.Interval = time.Hour },
		"ErrWaitTooLong":      func(c *replica.Config) { c.Wait = 61 * time.Second },
		"ErrWaitNegative":     func(c *replica.Config) { c.Wait = -time.Second },
		"ErrPageSizeZero":     func(c *replica.Config) { c.PageSize = 0 },
		"ErrPageSizeTooLarge": func(c *replica.Config) { c.PageSize = replica.MaxPageSize + 1 },
		"ErrPageTimeoutZero":  func(c *replica.Config) { c.PageTimeout = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := replica.DefaultConfig("http://primary:8080/")
			tweak(&cfg)
			if _, err := replica.New(context.Background(), empty.Follower(), client, cfg, nil); err == nil {
				t.Fatalf("config %+v was accepted", cfg)
			}
		})
	}
}
