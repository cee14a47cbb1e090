package outbound

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runConcurrent runs fn(i) for i in [0, n) on `workers` goroutines.
func runConcurrent(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// 1. 2,000 GETs at concurrency 32 with MaxConnsPerHost=32 use at most 32 TCP
// connections and reuse them.
func TestKeepAlivePoolReuse(t *testing.T) {
	goroutineGuard(t)
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxConnsPerHost = 32
	cfg.MaxIdleConnsPerHost = 32
	c, reg := newTestClient(t, cfg)
	t.Cleanup(c.Close)

	const n, workers = 2000, 32
	var failures atomic.Int64
	runConcurrent(n, workers, func(int) {
		b, code, _, err := c.Get(context.Background(), srv.URL+"/incidents")
		if err != nil || code != http.StatusOK || string(b) != `{"ok":true}` {
			failures.Add(1)
		}
	})
	if f := failures.Load(); f != 0 {
		t.Fatalf("%d of %d requests failed", f, n)
	}

	st := c.Stats()
	accepted := srv.accepted.Load()
	t.Logf("server accepted %d TCP connections (max %d open at once); client: new=%d reused=%d (%.2f%% reused)",
		accepted, srv.maxOpen.Load(), st.NewConns, st.ReusedConns, 100*float64(st.ReusedConns)/n)

	if accepted > int64(cfg.MaxConnsPerHost) || srv.maxOpen.Load() > int64(cfg.MaxConnsPerHost) {
		t.Errorf("server accepted %d connections (max open %d), want <= %d",
			accepted, srv.maxOpen.Load(), cfg.MaxConnsPerHost)
	}
	if st.NewConns+st.ReusedConns != n {
		t.Errorf("httptrace saw %d new + %d reused connections, want %d in total", st.NewConns, st.ReusedConns, n)
	}
	if int64(st.NewConns) > accepted {
		t.Errorf("client saw %d new connections but the server accepted only %d", st.NewConns, accepted)
	}
	// With a cold pool the first `workers` requests cannot reuse anything,
	// so at most MaxConnsPerHost requests may use a new connection; of all
	// later requests at least 99% (in practice 100%) must reuse one.
	later := uint64(n - cfg.MaxConnsPerHost)
	if st.NewConns > uint64(cfg.MaxConnsPerHost) ||
		float64(st.ReusedConns) < 0.99*float64(later) {
		t.Errorf("reused %d of %d requests (new %d), want >= 99%% of the %d requests after warm-up",
			st.ReusedConns, n, st.NewConns, later)
	}
	host := hostOf(srv)
	if got := metricValue(t, reg, MetricConnReused, map[string]string{"host": host}); got != float64(st.ReusedConns) {
		t.Errorf("%s = %v, want %d", MetricConnReused, got, st.ReusedConns)
	}
	if got := metricValue(t, reg, MetricConnNew, map[string]string{"host": host}); got != float64(st.NewConns) {
		t.Errorf("%s = %v, want %d", MetricConnNew, got, st.NewConns)
	}
	if got := metricValue(t, reg, MetricRequests, map[string]string{"host": host, "outcome": OutcomeSuccess}); got != n {
		t.Errorf("%s{outcome=success} = %v, want %d", MetricRequests, got, n)
	}
}

// 1b. Under backpressure (slow upstream, more callers than connections) the
// pool never exceeds MaxConnsPerHost and every request still completes.
func TestPoolBackpressure(t *testing.T) {
	goroutineGuard(t)
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	})
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxConnsPerHost = 4
	cfg.MaxIdleConnsPerHost = 4
	c, _ := newTestClient(t, cfg)
	t.Cleanup(c.Close)

	var failures atomic.Int64
	runConcurrent(200, 16, func(int) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, code, _, err := c.Get(ctx, srv.URL); err != nil || code != 200 {
			failures.Add(1)
		}
	})
	if f := failures.Load(); f != 0 {
		t.Fatalf("%d requests failed", f)
	}
	if got := srv.maxOpen.Load(); got > 4 {
		t.Errorf("server saw %d connections open at once, want <= 4", got)
	}
	if got := srv.accepted.Load(); got > 4 {
		t.Errorf("server accepted %d connections, want <= 4", got)
	}
}

// 2. A failing upstream opens the breaker after BreakerMinRequests; calls then
// fail fast without reaching it; after the open timeout a half-open probe
// reaches it; once it recovers the breaker closes.
func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	goroutineGuard(t)
	var healthy atomic.Bool
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if healthy.Load() {
			_, _ = io.WriteString(w, "ok")
			return
		}
		if time.Now().UnixNano()%2 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxRetries = 0 // count attempts exactly
	cfg.BreakerMinRequests = 20
	cfg.BreakerFailureRatio = 0.5
	cfg.BreakerOpenTimeout = 200 * time.Millisecond
	cfg.BreakerHalfOpenRequests = 1
	c, reg := newTestClient(t, cfg)
	t.Cleanup(c.Close)
	host := hostOf(srv)
	ctx := context.Background()

	for i := range cfg.BreakerMinRequests {
		if got := c.BreakerState(host); got != BreakerClosed {
			t.Fatalf("before request %d: breaker %s, want closed", i+1, got)
		}
		_, code, _, err := c.Get(ctx, srv.URL)
		if err != nil || code < 500 {
			t.Fatalf("request %d: code %d err %v, want a 5xx response", i+1, code, err)
		}
	}
	if got := c.BreakerState(host); got != BreakerOpen {
		t.Fatalf("after %d failures breaker is %s, want open", cfg.BreakerMinRequests, got)
	}
	if got := metricValue(t, reg, MetricBreakerState, map[string]string{"host": host}); got != 2 {
		t.Errorf("%s = %v, want 2 (open)", MetricBreakerState, got)
	}

	hitsBefore := srv.hits.Load()
	for range 50 {
		_, _, _, err := c.Get(ctx, srv.URL)
		if !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("while open: err = %v, want ErrCircuitOpen", err)
		}
		if !strings.Contains(err.Error(), host) {
			t.Errorf("error %q does not name the host %s", err, host)
		}
	}
	if got := srv.hits.Load(); got != hitsBefore {
		t.Fatalf("server got %d requests while the breaker was open, want 0", got-hitsBefore)
	}
	if got := c.Stats().BreakerRejections; got != 50 {
		t.Errorf("Stats.BreakerRejections = %d, want 50", got)
	}
	if got := metricValue(t, reg, MetricRequests, map[string]string{"host": host, "outcome": OutcomeBreakerOpen}); got != 50 {
		t.Errorf("%s{outcome=breaker_open} = %v, want 50", MetricRequests, got)
	}

	// Still failing: the half-open probe reaches the server and reopens.
	waitState(t, c, host, BreakerHalfOpen)
	if got := metricValue(t, reg, MetricBreakerState, map[string]string{"host": host}); got != 1 {
		t.Errorf("%s = %v, want 1 (half-open)", MetricBreakerState, got)
	}
	if _, code, _, err := c.Get(ctx, srv.URL); err != nil || code < 500 {
		t.Fatalf("half-open probe: code %d err %v, want the upstream's 5xx", code, err)
	}
	if got := srv.hits.Load(); got != hitsBefore+1 {
		t.Fatalf("half-open probe: server hits %d, want %d", got, hitsBefore+1)
	}
	if got := c.BreakerState(host); got != BreakerOpen {
		t.Fatalf("after a failed probe breaker is %s, want open", got)
	}

	// Recovered: the next probe succeeds and closes the breaker.
	healthy.Store(true)
	waitState(t, c, host, BreakerHalfOpen)
	if b, code, _, err := c.Get(ctx, srv.URL); err != nil || code != 200 || string(b) != "ok" {
		t.Fatalf("recovery probe: code %d err %v", code, err)
	}
	if got := c.BreakerState(host); got != BreakerClosed {
		t.Fatalf("after a successful probe breaker is %s, want closed", got)
	}
	if got := metricValue(t, reg, MetricBreakerState, map[string]string{"host": host}); got != 0 {
		t.Errorf("%s = %v, want 0 (closed)", MetricBreakerState, got)
	}
	for range 10 {
		if _, code, _, err := c.Get(ctx, srv.URL); err != nil || code != 200 {
			t.Fatalf("after recovery: code %d err %v", code, err)
		}
	}
}

// waitState polls BreakerState for at most 5 s.
func waitState(t *testing.T, c *Client, host, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.BreakerState(host) != want {
		if time.Now().After(deadline) {
			t.Fatalf("breaker still %s after 5s, want %s", c.BreakerState(host), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// 3. A hanging upstream: requests end at their deadline and count as breaker
// failures; callers cancelling their own context do not.
func TestHangingUpstream(t *testing.T) {
	goroutineGuard(t)
	release := make(chan struct{})
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release // never answer until the test ends
	})
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close

	t.Run("deadline is a failure", func(t *testing.T) {
		cfg := testConfig()
		cfg.RequestTimeout = 150 * time.Millisecond
		cfg.MaxRetries = 0
		cfg.BreakerMinRequests = 5
		c, reg := newTestClient(t, cfg)
		defer c.Close()
		host := hostOf(srv)

		var wg sync.WaitGroup
		errs := make([]error, 5)
		elapsed := make([]time.Duration, 5)
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				if i == 0 { // one caller with its own deadline
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 150*time.Millisecond)
					defer cancel()
				}
				start := time.Now()
				_, _, _, errs[i] = c.Get(ctx, srv.URL)
				elapsed[i] = time.Since(start)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("request %d: err = %v, want context.DeadlineExceeded", i, err)
			}
			if elapsed[i] < 100*time.Millisecond || elapsed[i] > 5*time.Second {
				t.Errorf("request %d ended after %v, want about its 150ms deadline", i, elapsed[i])
			}
		}
		if got := c.BreakerState(host); got != BreakerOpen {
			t.Fatalf("after 5 hung requests breaker is %s, want open", got)
		}
		if _, _, _, err := c.Get(context.Background(), srv.URL); !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("err = %v, want ErrCircuitOpen", err)
		}
		if got := metricValue(t, reg, MetricRequests, map[string]string{"host": host, "outcome": OutcomeError}); got != 5 {
			t.Errorf("%s{outcome=error} = %v, want 5", MetricRequests, got)
		}
	})

	t.Run("caller cancellation is not a failure", func(t *testing.T) {
		cfg := testConfig()
		cfg.RequestTimeout = 10 * time.Second
		cfg.BreakerMinRequests = 5
		c, reg := newTestClient(t, cfg)
		defer c.Close()
		host := hostOf(srv)

		const n = 50
		var wrong atomic.Int64
		runConcurrent(n, 10, func(int) {
			ctx, cancel := context.WithCancel(context.Background())
			timer := time.AfterFunc(20*time.Millisecond, cancel)
			defer timer.Stop()
			defer cancel()
			if _, _, _, err := c.Get(ctx, srv.URL); !errors.Is(err, context.Canceled) {
				wrong.Add(1)
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
		if got := c.BreakerState(host); got != BreakerClosed {
			t.Fatalf("after %d cancellations breaker is %s, want closed", n, got)
		}
		st := c.Stats()
		if st.Canceled != n || st.Retries != 0 {
			t.Errorf("Stats: canceled %d retries %d, want %d and 0", st.Canceled, st.Retries, n)
		}
		if got := metricValue(t, reg, MetricRequests, map[string]string{"host": host, "outcome": OutcomeCanceled}); got != n {
			t.Errorf("%s{outcome=canceled} = %v, want %d", MetricRequests, got, n)
		}
	})
}

// resetHandler hijacks the connection and closes it with SO_LINGER 0, so the
// client sees a TCP RST.
func resetHandler(t testing.TB) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}
}

// 4. Connection resets are retried with backoff, then reported; the retry
// budget bounds the extra load.
func TestConnectionResetRetriedWithinBudget(t *testing.T) {
	goroutineGuard(t)
	srv := newTestServer(t, resetHandler(t))
	t.Cleanup(srv.Close)

	t.Run("retried then error", func(t *testing.T) {
		cfg := testConfig()
		c, reg := newTestClient(t, cfg)
		defer c.Close()
		before := srv.hits.Load()
		_, _, _, err := c.Get(context.Background(), srv.URL)
		if err == nil {
			t.Fatal("want an error from a resetting upstream")
		}
		if errors.Is(err, ErrCircuitOpen) || errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want the connection error", err)
		}
		if !strings.Contains(err.Error(), "attempt 4/4") || !strings.Contains(err.Error(), hostOf(srv)) {
			t.Errorf("error %q should name the host and the last attempt (4/4)", err)
		}
		if got := srv.hits.Load() - before; got != int64(1+cfg.MaxRetries) {
			t.Errorf("server hits = %d, want %d (1 + MaxRetries)", got, 1+cfg.MaxRetries)
		}
		if got := c.Stats().Retries; got != uint64(cfg.MaxRetries) {
			t.Errorf("Stats.Retries = %d, want %d", got, cfg.MaxRetries)
		}
		if got := metricValue(t, reg, MetricRetries, map[string]string{"host": hostOf(srv), "reason": "conn_error"}); got != float64(cfg.MaxRetries) {
			t.Errorf("%s{reason=conn_error} = %v, want %d", MetricRetries, got, cfg.MaxRetries)
		}
	})

	t.Run("budget", func(t *testing.T) {
		cfg := testConfig()
		cfg.RetryBudgetRatio = 0.1
		cfg.RetryBudgetMinPerSecond = 1
		cfg.RetryBudgetWindow = 10 * time.Second
		cfg.BreakerMinRequests = 1 << 30 // keep the breaker out of this test
		c, reg := newTestClient(t, cfg)
		defer c.Close()

		const n = 100
		before := srv.hits.Load()
		for i := range n {
			if _, _, _, err := c.Get(context.Background(), srv.URL); err == nil {
				t.Fatalf("request %d: want an error", i)
			}
		}
		hits := srv.hits.Load() - before
		allowance := cfg.RetryBudgetRatio*n + float64(cfg.RetryBudgetMinPerSecond)*cfg.RetryBudgetWindow.Seconds()
		bound := int64(n) + int64(allowance+0.999)
		st := c.Stats()
		t.Logf("%d requests -> %d server hits (bound %d), %d retries, budget exhausted %d times",
			n, hits, bound, st.Retries, st.RetryBudgetExhausted)
		if hits > bound {
			t.Errorf("server hits = %d, want <= %d (requests*(1+ratio)+min)", hits, bound)
		}
		if st.Retries == 0 || st.RetryBudgetExhausted == 0 {
			t.Errorf("want some retries and some refused by the budget, got %d and %d", st.Retries, st.RetryBudgetExhausted)
		}
		if got := metricValue(t, reg, MetricRetryBudgetExhausted, map[string]string{"host": hostOf(srv)}); got != float64(st.RetryBudgetExhausted) {
			t.Errorf("%s = %v, want %d", MetricRetryBudgetExhausted, got, st.RetryBudgetExhausted)
		}
	})
}

// 5. Retry-After beyond BackoffCap is not honoured by waiting: the response
// comes back at once, unretried. Within the cap it is honoured.
func TestRetryAfter(t *testing.T) {
	goroutineGuard(t)
	var retryAfter atomic.Value
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retryAfter.Load().(string))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	t.Cleanup(srv.Close)

	for _, ra := range []string{"3600", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)} {
		t.Run("beyond cap "+ra, func(t *testing.T) {
			retryAfter.Store(ra)
			cfg := DefaultConfig() // BackoffCap 2s
			c, _ := newTestClient(t, cfg)
			defer c.Close()
			before := srv.hits.Load()
			start := time.Now()
			_, code, hdr, err := c.Get(context.Background(), srv.URL)
			elapsed := time.Since(start)
			if err != nil || code != http.StatusServiceUnavailable || hdr.Get("Retry-After") != ra {
				t.Fatalf("code %d err %v, want the 503 with its Retry-After", code, err)
			}
			if elapsed > 30*time.Second { // i.e. it did not sleep for an hour
				t.Fatalf("call took %v", elapsed)
			}
			if got := srv.hits.Load() - before; got != 1 {
				t.Errorf("server hits = %d, want 1 (no retry)", got)
			}
			if st := c.Stats(); st.Retries != 0 || st.RetryAfterTooLong != 1 {
				t.Errorf("Stats: retries %d, retryAfterTooLong %d; want 0 and 1", st.Retries, st.RetryAfterTooLong)
			}
		})
	}

	t.Run("within cap", func(t *testing.T) {
		retryAfter.Store("1")
		cfg := DefaultConfig()
		cfg.MaxRetries = 1
		c, _ := newTestClient(t, cfg)
		defer c.Close()
		before := srv.hits.Load()
		start := time.Now()
		_, code, _, err := c.Get(context.Background(), srv.URL)
		elapsed := time.Since(start)
		if err != nil || code != http.StatusServiceUnavailable {
			t.Fatalf("code %d err %v", code, err)
		}
		if got := srv.hits.Load() - before; got != 2 {
			t.Errorf("server hits = %d, want 2", got)
		}
		if elapsed < 900*time.Millisecond {
			t.Errorf("retried after %v, want Retry-After (1s) honoured", elapsed)
		}
	})

	t.Run("backoff respects caller cancellation", func(t *testing.T) {
		retryAfter.Store("2") // == BackoffCap: honoured, so a 2s sleep
		cfg := DefaultConfig()
		c, _ := newTestClient(t, cfg)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, _, err := c.Get(ctx, srv.URL)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if el := time.Since(start); el > 1500*time.Millisecond {
			t.Errorf("backoff ignored the caller deadline: returned after %v", el)
		}
	})
}

// 6. POST is retried only with an Idempotency-Key (and a replayable body).
func TestPostRetryPolicy(t *testing.T) {
	goroutineGuard(t)
	var mu sync.Mutex
	var bodies []string
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	t.Cleanup(srv.Close)
	cfg := testConfig()
	c, _ := newTestClient(t, cfg)
	t.Cleanup(c.Close)

	const payload = `{"title":"BFF keep-alive off"}`
	cases := []struct {
		name     string
		method   string
		key      string
		noGetter bool
		want     int64
	}{
		{"POST without key", http.MethodPost, "", false, 1},
		{"POST with key", http.MethodPost, "k-123", false, int64(1 + cfg.MaxRetries)},
		{"POST with key, unreplayable body", http.MethodPost, "k-456", true, 1},
		{"PATCH", http.MethodPatch, "", false, 1},
		{"PUT", http.MethodPut, "", false, int64(1 + cfg.MaxRetries)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			bodies = nil
			mu.Unlock()
			req, err := http.NewRequestWithContext(context.Background(), tc.method, srv.URL, bytes.NewBufferString(payload))
			if err != nil {
				t.Fatal(err)
			}
			if tc.key != "" {
				req.Header.Set(IdempotencyKeyHeader, tc.key)
			}
			if tc.noGetter {
				req.Body = io.NopCloser(strings.NewReader(payload))
				req.GetBody = nil
			}
			before := srv.hits.Load()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got := srv.hits.Load() - before; got != tc.want {
				t.Errorf("server hits = %d, want %d", got, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, b := range bodies {
				if b != payload {
					t.Errorf("attempt %d sent body %q, want %q", i+1, b, payload)
				}
			}
		})
	}
}

// 4xx (other than 429) are successes for the breaker; 429 is a failure.
func TestBreakerVerdicts(t *testing.T) {
	goroutineGuard(t)
	var status atomic.Int64
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	})
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxRetries = 0
	cfg.BreakerMinRequests = 5
	host := hostOf(srv)

	status.Store(http.StatusNotFound)
	c, _ := newTestClient(t, cfg)
	t.Cleanup(c.Close)
	for range 30 {
		if _, code, _, err := c.Get(context.Background(), srv.URL); err != nil || code != 404 {
			t.Fatalf("code %d err %v", code, err)
		}
	}
	if got := c.BreakerState(host); got != BreakerClosed {
		t.Errorf("after 30 x 404 breaker is %s, want closed", got)
	}

	status.Store(http.StatusTooManyRequests)
	c2, _ := newTestClient(t, cfg)
	t.Cleanup(c2.Close)
	for range 5 {
		_, _, _, _ = c2.Get(context.Background(), srv.URL)
	}
	if got := c2.BreakerState(host); got != BreakerOpen {
		t.Errorf("after 5 x 429 breaker is %s, want open", got)
	}
}

// GetJSON decodes, reports non-2xx as *StatusError, and bounds the body.
func TestGetJSONAndLimits(t *testing.T) {
	goroutineGuard(t)
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Accept") != "application/json" || r.Header.Get("User-Agent") != "incidentlib-outbound/1" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			_, _ = io.WriteString(w, `{"id":"pm-1","title":"keep-alive"}`)
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "no such postmortem")
		case "/big":
			_, _ = w.Write(bytes.Repeat([]byte("x"), 4096))
		}
	})
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxResponseBytes = 1024
	c, _ := newTestClient(t, cfg)
	t.Cleanup(c.Close)
	ctx := context.Background()

	var v struct{ ID, Title string }
	if err := c.GetJSON(ctx, srv.URL+"/ok", &v); err != nil || v.ID != "pm-1" {
		t.Fatalf("GetJSON: %+v, %v", v, err)
	}
	var se *StatusError
	if err := c.GetJSON(ctx, srv.URL+"/missing", &v); !errors.As(err, &se) || se.StatusCode != 404 || string(se.Body) != "no such postmortem" {
		t.Fatalf("GetJSON /missing: %v", err)
	}
	if _, _, _, err := c.Get(ctx, srv.URL+"/big"); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("Get /big: err = %v, want ErrResponseTooLarge", err)
	}
	// Do's body is bounded the same way.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/big", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, ErrResponseTooLarge) || len(b) != 1024 {
		t.Fatalf("Do /big: read %d bytes, err %v", len(b), err)
	}
}

// All metric names are registered, and a nil registerer is accepted.
func TestMetricsRegistered(t *testing.T) {
	goroutineGuard(t)
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	t.Cleanup(srv.Close)
	cfg := testConfig()
	cfg.MaxRetries = 1
	cfg.RetryBudgetRatio = 1
	c, reg := newTestClient(t, cfg)
	t.Cleanup(c.Close)
	_, _, _, _ = c.Get(context.Background(), srv.URL)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "host" && l.GetName() != "outcome" && l.GetName() != "reason" {
					t.Errorf("%s has unexpected label %s", mf.GetName(), l.GetName())
				}
			}
		}
	}
	for _, name := range []string{MetricRequests, MetricRequestDuration, MetricConnReused, MetricConnNew,
		MetricRetries, MetricRetryBudgetExhausted, MetricBreakerState} {
		if !got[name] {
			t.Errorf("metric %s not exported", name)
		}
	}

	// A second client on the same registry shares the collectors.
	c2, err := New(cfg, reg)
	if err != nil {
		t.Fatalf("second client on the same registry: %v", err)
	}
	c2.Close()
	// No registry at all.
	c3, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, code, _, err := c3.Get(context.Background(), srv.URL); err != nil || code != 503 {
		t.Fatalf("nil-registry client: code %d err %v", code, err)
	}
	c3.Close()
}

// Hosts beyond MaxHosts share the "other" label and breaker.
func TestMaxHosts(t *testing.T) {
	goroutineGuard(t)
	h := func(w http.ResponseWriter, r *http.Request) {}
	s1, s2 := newTestServer(t, h), newTestServer(t, h)
	t.Cleanup(s1.Close)
	t.Cleanup(s2.Close)
	cfg := testConfig()
	cfg.MaxHosts = 1
	c, reg := newTestClient(t, cfg)
	t.Cleanup(c.Close)
	for _, s := range []*testServer{s1, s2} {
		if _, _, _, err := c.Get(context.Background(), s.URL); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricValue(t, reg, MetricRequests, map[string]string{"host": hostOf(s1), "outcome": OutcomeSuccess}); got != 1 {
		t.Errorf("first host: %v", got)
	}
	if got := metricValue(t, reg, MetricRequests, map[string]string{"host": otherHost, "outcome": OutcomeSuccess}); got != 1 {
		t.Errorf("second host should be labelled %q: %v", otherHost, got)
	}
}

// Closing the body of an upstream that stalls mid-body is bounded by
// DrainTimeout, not by the (long) request deadline; same for a retryable
// response the client discards itself.
func TestStalledBodyDrainIsBounded(t *testing.T) {
	goroutineGuard(t)
	release := make(chan struct{})
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/503" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = io.WriteString(w, "partial body")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	cfg := testConfig()
	cfg.RequestTimeout = 30 * time.Second
	cfg.DrainTimeout = 50 * time.Millisecond
	c, _ := newTestClient(t, cfg)
	t.Cleanup(c.Close)

	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/200", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp.Body.Close()
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Close of a stalled body took %v", el)
	}

	// 503 with a stalled body: each discarded attempt is cut off, then the
	// last response is handed out and its Close is bounded too.
	start = time.Now()
	req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/503", nil)
	resp, err = c.Do(req)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("Do /503: %v", err)
	}
	resp.Body.Close()
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("retries over stalled bodies took %v", el)
	}
	if got := c.Stats().Retries; got != uint64(cfg.MaxRetries) {
		t.Errorf("Stats.Retries = %d, want %d", got, cfg.MaxRetries)
	}
}
