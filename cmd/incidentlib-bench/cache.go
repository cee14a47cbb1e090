package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
)

func init() {
	register("cache", "the list page from the response cache, by POST and by persisted GET, against a static handler and uncached, over loopback", runCache)
}

type cacheBench struct {
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	concurrency int
	count       int
	seed        int64
	first       int

	cpu map[string][]time.Duration // CPU per request of each measurement, by target
}

func runCache(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cache", flag.ContinueOnError)
	fs.SetOutput(stdout)
	b := cacheBench{cpu: map[string][]time.Duration{}}
	fs.DurationVar(&b.duration, "duration", 5*time.Second, "how long each measurement drives one target (a duration such as 5s)")
	fs.DurationVar(&b.warmup, "warmup", time.Second, "how long each target is driven, unmeasured, before the first round")
	fs.IntVar(&b.rounds, "rounds", 3, "interleaved rounds; the median is reported (at least 1)")
	fs.IntVar(&b.concurrency, "concurrency", 32, "concurrent keep-alive connections (at least 1)")
	fs.IntVar(&b.count, "count", 10_000, "generated incidents in the store (at least 100)")
	fs.Int64Var(&b.seed, "seed", 1, "generator seed")
	fs.IntVar(&b.first, "first", 20, "page size of the list page, 1 to 100")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case b.duration <= 0 || b.warmup < 0:
		return errors.New("-duration must be positive and -warmup not negative")
	case b.rounds < 1:
		return fmt.Errorf("-rounds must be at least 1, got %d", b.rounds)
	case b.concurrency < 1:
		return fmt.Errorf("-concurrency must be at least 1, got %d", b.concurrency)
	case b.count < 100:
		return fmt.Errorf("-count must be at least 100, got %d", b.count)
	case b.first < 1 || b.first > incidentlib.MaxPageSize:
		return fmt.Errorf("-first must be 1 to %d, got %d", incidentlib.MaxPageSize, b.first)
	}
	return b.run(ctx, stdout)
}

// loadTarget is one thing the cache benchmark drives.
type loadTarget struct {
	name   string
	method string
	url    string
	body   []byte
	want   []byte // the exact response expected
}

func (t loadTarget) request(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if t.body != nil {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, body)
	if err != nil {
		return nil, err
	}
	if t.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func (t loadTarget) do(ctx context.Context, client *http.Client, buf []byte) ([]byte, error) {
	req, err := t.request(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	w := bytes.NewBuffer(buf[:0])
	if _, err := w.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, w.Bytes())
	}
	return w.Bytes(), nil
}

func (b *cacheBench) run(ctx context.Context, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "incidentlib-bench-cache-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(stdout, "cache: generating and importing %d incidents (seed %d)\n", b.count, b.seed)
	db, _, err := openGenerated(ctx, filepath.Join(dir, "bench.db"), b.count, b.seed)
	if err != nil {
		return err
	}
	defer db.Close()

	// Both servers as serve runs them (prod mode, a request log line per
	// request, formatted as JSON and thrown away), over the same store;
	// one with the response cache (the default 64 MiB), one without.
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	cached, err := server.New(db, server.Config{Prod: true, Logger: logger, LogRequests: true}, reg)
	if err != nil {
		return err
	}
	uncached, err := server.New(db, server.Config{Prod: true, Logger: logger, LogRequests: true, ResponseCacheBytes: -1}, nil)
	if err != nil {
		return err
	}
	var urls [2]string
	for i, s := range []*server.Server{cached, uncached} {
		s.SetReady(true)
		u, stop, err := listen(s)
		if err != nil {
			return err
		}
		defer stop()
		urls[i] = u + "/graphql"
	}

	transport := &http.Transport{
		MaxIdleConns:        b.concurrency * 2,
		MaxIdleConnsPerHost: b.concurrency,
		MaxConnsPerHost:     b.concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}

	vars := map[string]any{"first": b.first}
	varsJSON, _ := json.Marshal(vars)
	hash := server.DocumentHash(ListPageQuery)
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}
	extJSON, _ := json.Marshal(ext)
	postBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": vars})
	registerBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": vars, "extensions": ext})
	getQuery := "?" + url.Values{"extensions": {string(extJSON)}, "variables": {string(varsJSON)}}.Encode()

	// The reference bytes come from the uncached server; every target must
	// answer exactly them. Registering the hash by POST is what an APQ
	// client does once.
	want, err := loadTarget{method: http.MethodPost, url: urls[1], body: postBody}.do(ctx, client, nil)
	if err != nil {
		return fmt.Errorf("list page: %w", err)
	}
	if bytes.Contains(want, []byte(`"errors"`)) {
		return fmt.Errorf("the list page has errors: %.300s", want)
	}
	if _, err := (loadTarget{method: http.MethodPost, url: urls[0], body: registerBody}).do(ctx, client, nil); err != nil {
		return fmt.Errorf("register the persisted query: %w", err)
	}
	contentType := "application/graphql-response+json"
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(want)
	})
	staticURL, stopStatic, err := listen(static)
	if err != nil {
		return err
	}
	defer stopStatic()

	targets := []loadTarget{
		{name: "static handler, POST", method: http.MethodPost, url: staticURL + "/graphql", body: postBody, want: want},
		{name: "response cache, POST", method: http.MethodPost, url: urls[0], body: postBody, want: want},
		{name: "static handler, GET", method: http.MethodGet, url: staticURL + "/graphql" + getQuery, want: want},
		{name: "response cache, persisted GET", method: http.MethodGet, url: urls[0] + getQuery, want: want},
		{name: "uncached, POST", method: http.MethodPost, url: urls[1], body: postBody, want: want},
	}
	fmt.Fprintf(stdout, "cache: GOMAXPROCS=%d NumCPU=%d %s concurrency=%d duration=%s rounds=%d\n",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(), b.concurrency, b.duration, b.rounds)
	fmt.Fprintf(stdout, "cache: list page (first: %d) response %d bytes sha256 %s; persisted GET %s\n", b.first, len(want), sha(want), strings.TrimPrefix(getQuery, "?")[:60]+"…")

	for _, t := range targets {
		if _, err := b.drive(ctx, client, t, b.warmup); err != nil {
			return fmt.Errorf("warm-up %s: %w", t.name, err)
		}
	}
	hitsBefore, missesBefore := cacheOutcomes(reg)
	clear(b.cpu) // the warm-up's
	results := make([][]result, len(targets))
	for round := 0; round < b.rounds; round++ {
		for i, t := range targets {
			r, err := b.drive(ctx, client, t, b.duration)
			cpu := b.cpu[t.name][len(b.cpu[t.name])-1]
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, t.name, err)
			}
			results[i] = append(results[i], r)
			fmt.Fprintf(stdout, "  round %d %-32s %9.0f req/s  p50 %7s  p99 %7s  CPU %7s/req  %6.0f allocs/req %8.0f B/req\n",
				round+1, t.name, r.rps(), round3(r.p50), round3(r.p99), round3(cpu), r.allocs, r.bytes)
		}
	}
	hits, misses := cacheOutcomes(reg)

	fmt.Fprintf(stdout, "\nmedian of %d interleaved rounds of %s, %d connections, nproc %d:\n", b.rounds, b.duration, b.concurrency, runtime.NumCPU())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\treq/s\tp50\tp99\tCPU/req\tallocs/req\tB/req\terrors\t")
	med := make([]result, len(targets))
	cpu := make([]time.Duration, len(targets))
	for i, t := range targets {
		med[i] = median(results[i])
		cpu[i] = medianDuration(b.cpu[t.name])
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%.0f\t%.0f\t%d\t\n", t.name, med[i].rps(), round3(med[i].p50), round3(med[i].p99), round3(cpu[i]), med[i].allocs, med[i].bytes, med[i].errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := func(name string, c, s result) {
		ratio, p99 := c.rps()/s.rps(), float64(c.p99)/float64(s.p99)
		ok := "meets"
		if ratio < 0.7 || p99 > 2 {
			ok = "MISSES"
		}
		fmt.Fprintf(stdout, "%s: %.3f of the static handler's req/s (target at least 0.7), p99 %.2fx the static handler's (target at most 2x): %s the target\n", name, ratio, p99, ok)
	}
	verdict("response cache, POST", med[1], med[0])
	verdict("response cache, persisted GET", med[3], med[2])
	fmt.Fprintf(stdout, "CPU per request (the whole process, load generator included), static over cached: POST %.3f, GET %.3f\n",
		float64(cpu[0])/float64(cpu[1]), float64(cpu[2])/float64(cpu[3]))
	fmt.Fprintf(stdout, "uncached POST: %.3f of the static handler's req/s; the cache serves %.1fx the uncached rate\n", med[4].rps()/med[0].rps(), med[1].rps()/med[4].rps())
	fmt.Fprintf(stdout, "response cache during the measured rounds: %.0f hits, %.0f misses\n", hits-hitsBefore, misses-missesBefore)
	for _, rs := range results {
		for _, r := range rs {
			if r.errors > 0 {
				return fmt.Errorf("%d requests failed or returned other bytes", r.errors)
			}
		}
	}
	if misses-missesBefore > 0 {
		return fmt.Errorf("the response cache missed %.0f times with no write", misses-missesBefore)
	}
	return nil
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// cacheOutcomes reads the response cache's hit and miss counters.
func cacheOutcomes(g prometheus.Gatherer) (hits, misses float64) {
	fams, err := g.Gather()
	if err != nil {
		return 0, 0
	}
	for _, f := range fams {
		if f.GetName() != "incidentlib_response_cache_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			switch label(m, "outcome") {
			case "hit":
				hits += m.GetCounter().GetValue()
			case "miss", "stale":
				misses += m.GetCounter().GetValue()
			}
		}
	}
	return hits, misses
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// drive runs b.concurrency workers against t for d and measures them.
func (b *cacheBench) drive(ctx context.Context, client *http.Client, t loadTarget, d time.Duration) (result, error) {
	var wg sync.WaitGroup
	var errs atomic.Int64
	var firstErr atomic.Pointer[error]
	lat := make([][]time.Duration, b.concurrency)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	start := time.Now()
	deadline := start.Add(d)
	for w := 0; w < b.concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := make([]byte, 0, len(t.want)+512)
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					return
				}
				resp, err := t.do(ctx, client, buf)
				lat[w] = append(lat[w], time.Since(t0))
				if err == nil && !bytes.Equal(resp, t.want) {
					err = fmt.Errorf("the response differs from the reference: %.200s", resp)
				}
				if err != nil && errs.Add(1) == 1 {
					firstErr.Store(&err)
				}
				if resp != nil {
					buf = resp[:0]
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := time.Duration(processCPU() - cpu0) // the whole process: servers and load generator (cpu_unix.go)
	runtime.ReadMemStats(&after)
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return result{}, errors.New("no request finished")
	}
	slices.Sort(all)
	r := result{
		requests: len(all),
		errors:   int(errs.Load()),
		elapsed:  elapsed,
		p50:      all[len(all)*50/100],
		p99:      all[min(len(all)-1, len(all)*99/100)],
		allocs:   float64(after.Mallocs-before.Mallocs) / float64(len(all)),
		bytes:    float64(after.TotalAlloc-before.TotalAlloc) / float64(len(all)),
	}
	b.cpu[t.name] = append(b.cpu[t.name], cpu/time.Duration(len(all)))
	if p := firstErr.Load(); p != nil && r.errors > 0 {
		return r, *p
	}
	return r, nil
}
