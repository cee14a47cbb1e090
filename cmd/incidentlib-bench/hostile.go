package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/tracing"
)

func init() {
	registerCommand("hostile", "a normal client alone, then while a hostile client sends refused requests as fast as it can", func() command { return &hostileBench{} })
}

type hostileBench struct {
	phases        phaseFlags
	count         int
	seed          int64
	first         int
	normal        int
	hostile       int
	responseCache bool
	kinds         string
	attacker      string
	attack        string // internal: run as the attacking process against this URL
}

func (b *hostileBench) declare(fs *flag.FlagSet) {
	b.phases.declare(fs, "how long each phase runs (a duration such as 5s)", "how long the normal client runs, unmeasured, first", "interleaved rounds of the two phases; the median round is reported (at least 1)")
	fs.IntVar(&b.count, "count", 10_000, "generated incidents in the store (at least 100)")
	fs.Int64Var(&b.seed, "seed", 1, "generator seed")
	fs.IntVar(&b.first, "first", 20, "page size of the normal client's list page, 1 to 100")
	fs.IntVar(&b.normal, "normal", 1, "the normal client's connections, each one request after the other (at least 1)")
	fs.IntVar(&b.hostile, "hostile", 1, "the hostile client's connections, each one request after the other (at least 1)")
	fs.StringVar(&b.attacker, "attacker", "process", "where the hostile client runs: process (its own process, as a real client would) or goroutine (in this one)")
	fs.StringVar(&b.attack, "attack", "", "internal: be the hostile client's process, attacking this /graphql URL for -duration")
	fs.StringVar(&b.kinds, "kinds", "", "only the hostile requests whose name contains one of these comma-separated words (default: all)")
	fs.BoolVar(&b.responseCache, "response-cache", false, "leave the response cache on (off by default: the normal client's page would be served from it)")
}

func (b *hostileBench) check() error {
	if err := b.phases.check(); err != nil {
		return err
	}
	switch {
	case b.normal < 1 || b.hostile < 1:
		return errors.New("-normal and -hostile must be at least 1")
	case b.count < 100:
		return fmt.Errorf("-count must be at least 100, got %d", b.count)
	case b.first < 1 || b.first > 100:
		return fmt.Errorf("-first must be 1 to 100, got %d", b.first)
	case b.attacker != "process" && b.attacker != "goroutine":
		return fmt.Errorf("-attacker must be process or goroutine, got %q", b.attacker)
	}
	return nil
}

func (b *hostileBench) run(ctx context.Context, stdout io.Writer) error {
	reqs, err := selectHostile(b.kinds)
	if err != nil {
		return err
	}
	if b.attack != "" {
		ctx, cancel := context.WithTimeout(ctx, b.phases.duration)
		defer cancel()
		client := newBenchClient(b.hostile)
		defer client.CloseIdleConnections()
		fmt.Fprintf(stdout, "sent %d\n", attack(ctx, client, b.attack, reqs, b.hostile))
		return nil
	}
	return b.measure(ctx, reqs, stdout)
}

// serverTimes records how long the handler took for each hostile request
// and what it answered, by the request's kind (the X-Bench-Kind header).
type serverTimes struct {
	inFlight sync.WaitGroup // every request, so that the store closes after the last

	mu     sync.Mutex
	byKind map[string][]time.Duration
	status map[string]map[int]int
}

func (st *serverTimes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.inFlight.Add(1)
		defer st.inFlight.Done()
		kind := r.Header.Get("X-Bench-Kind")
		if kind == "" {
			h.ServeHTTP(w, r)
			return
		}
		tw := tracing.NewStatusWriter(w) // the server's own status recorder
		start := time.Now()
		h.ServeHTTP(tw, r)
		d := time.Since(start)
		st.mu.Lock()
		st.byKind[kind] = append(st.byKind[kind], d)
		if st.status[kind] == nil {
			st.status[kind] = map[int]int{}
		}
		st.status[kind][tw.Status()]++
		st.mu.Unlock()
	})
}

// heapPeak samples the heap (runtime/metrics, no stop of the world) until
// stopped, and returns the largest value seen.
func heapPeak(ctx context.Context) func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		cancel()
		<-done
		return peak.Load()
	}
}

type hostilePhase struct {
	p50, p99     time.Duration
	requests     int
	errors       int
	hostileSent  int
	heap         uint64
	normalErrMsg string
}

func (b *hostileBench) measure(ctx context.Context, reqs []hostileRequest, stdout io.Writer) error {
	db, _, done, err := tempGenerated(ctx, "hostile", b.count, b.seed, stdout)
	if err != nil {
		return err
	}
	defer done()
	cacheBytes := int64(-1)
	if b.responseCache {
		cacheBytes = 0
	}
	srv, err := newServer(db, nil, server.Config{Prod: true, ResponseCacheBytes: cacheBytes}, nil)
	if err != nil {
		return err
	}
	srv.SetReady(true)
	times := &serverTimes{byKind: map[string][]time.Duration{}, status: map[string]map[int]int{}}
	base, stop, err := listen(times.wrap(srv))
	if err != nil {
		return err
	}
	defer func() { stop(); times.inFlight.Wait() }()
	endpoint := base + "/graphql"

	normalClient, hostileClient := newBenchClient(b.normal), newBenchClient(b.hostile)
	defer normalClient.CloseIdleConnections()
	defer hostileClient.CloseIdleConnections()

	normalBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": map[string]any{"first": b.first}})
	normal := loadTarget{url: endpoint, body: normalBody}
	hostile := func(ctx context.Context, h hostileRequest) (string, error) {
		return sendHostile(ctx, hostileClient, endpoint, h)
	}

	// Every hostile request once, to check it is refused with its code.
	for _, h := range reqs {
		code, err := hostile(ctx, h)
		if err != nil {
			return err
		}
		if code != h.code {
			return fmt.Errorf("%s: refused with %s, want %s", h.name, code, h.code)
		}
	}
	times.mu.Lock()
	times.byKind, times.status = map[string][]time.Duration{}, map[string]map[int]int{}
	times.mu.Unlock()

	drive := func(d time.Duration, withAttack bool) (hostilePhase, error) {
		runtime.GC()
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		peak := heapPeak(ctx)
		var wg sync.WaitGroup
		var hostileSent atomic.Int64
		var attackErr error
		if withAttack {
			wg.Add(1)
			if b.attacker == "goroutine" {
				go func() {
					defer wg.Done()
					hostileSent.Store(int64(attack(ctx, hostileClient, endpoint, reqs, b.hostile)))
				}()
			} else {
				exe, err := os.Executable()
				if err != nil {
					return hostilePhase{}, err
				}
				cmd := exec.Command(exe, "hostile", "-attack", endpoint, "-duration", d.String(),
					"-hostile", strconv.Itoa(b.hostile), "-kinds", b.kinds)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					return hostilePhase{}, err
				}
				go func() {
					defer wg.Done()
					if err := cmd.Wait(); err != nil {
						attackErr = fmt.Errorf("the attacking process: %v: %s", err, out.Bytes())
						return
					}
					var n int64
					if _, err := fmt.Sscanf(out.String(), "sent %d", &n); err != nil {
						attackErr = fmt.Errorf("the attacking process said %q", out.String())
					}
					hostileSent.Store(n)
				}()
			}
		}
		lat, failed, firstErr := keepAlive(ctx, b.normal, time.Time{}, func(int) (loadWorker, error) {
			var body []byte
			return loadWorker{
				send: func() (err error) { body, err = normal.do(ctx, normalClient, body); return err },
				checked: func(_ time.Time, err error) error {
					if err == nil && bytes.Contains(body, []byte(`"errors"`)) {
						err = fmt.Errorf("status %d: %.200s", http.StatusOK, body)
					}
					return err
				},
			}, nil
		})
		wg.Wait()
		if attackErr != nil {
			return hostilePhase{}, attackErr
		}
		all := sortedLatencies(lat)
		if len(all) == 0 {
			return hostilePhase{}, errors.New("the normal client finished no request")
		}
		ph := hostilePhase{requests: len(all), errors: failed, hostileSent: int(hostileSent.Load()), heap: peak()}
		ph.p50, ph.p99 = percentiles(all)
		if firstErr != nil {
			ph.normalErrMsg = firstErr.Error()
		}
		return ph, nil
	}

	if b.phases.warmup > 0 {
		if _, err := drive(b.phases.warmup, false); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "hostile: GOMAXPROCS=%d NumCPU=%d %s; normal client: list page (first: %d), %d connection(s); hostile client: %d kinds of request, %d connection(s), in a %s; response cache %v\n",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(), b.first, b.normal, len(reqs), b.hostile, b.attacker, b.responseCache)
	var alone, attacked []hostilePhase
	for round := 1; round <= b.phases.rounds; round++ {
		a, err := drive(b.phases.duration, false)
		if err != nil {
			return err
		}
		h, err := drive(b.phases.duration, true)
		if err != nil {
			return err
		}
		alone, attacked = append(alone, a), append(attacked, h)
		fmt.Fprintf(stdout, "  round %d  alone: %6d req p50 %8s p99 %8s heap %s   under attack: %6d req p50 %8s p99 %8s heap %s, %d hostile requests\n",
			round, a.requests, us(a.p50), us(a.p99), mibs(a.heap), h.requests, us(h.p50), us(h.p99), mibs(h.heap), h.hostileSent)
		for _, ph := range []hostilePhase{a, h} {
			if ph.errors > 0 {
				return fmt.Errorf("the normal client got %d errors, first: %s", ph.errors, ph.normalErrMsg)
			}
		}
	}
	med := func(ps []hostilePhase) hostilePhase {
		s := slices.Clone(ps)
		slices.SortFunc(s, func(a, b hostilePhase) int { return int(a.p99 - b.p99) })
		return s[len(s)/2]
	}
	a, h := med(alone), med(attacked)
	peakHeap := uint64(0)
	for _, ph := range append(slices.Clone(alone), attacked...) {
		peakHeap = max(peakHeap, ph.heap)
	}
	fmt.Fprintf(stdout, "\nnormal client (median round by p99 of %d rounds of %s, nproc %d):\n", b.phases.rounds, b.phases.duration, runtime.NumCPU())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\trequests\tp50\tp99\tpeak heap\t")
	fmt.Fprintf(tw, "alone\t%d\t%s\t%s\t%s\t\n", a.requests, us(a.p50), us(a.p99), mibs(a.heap))
	fmt.Fprintf(tw, "under attack\t%d\t%s\t%s\t%s\t\n", h.requests, us(h.p50), us(h.p99), mibs(h.heap))
	if err := tw.Flush(); err != nil {
		return err
	}

	times.mu.Lock()
	defer times.mu.Unlock()
	fmt.Fprintf(stdout, "\nserver time per hostile request (handler entry to return; every round under attack):\n")
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "request\trefused with\tstatus\tcount\tp50\tp99\tmax\t")
	worst := time.Duration(0)
	for _, r := range reqs {
		d := slices.Clone(times.byKind[r.name])
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		worst = max(worst, d[len(d)-1])
		var statuses []string
		for s, n := range times.status[r.name] {
			statuses = append(statuses, fmt.Sprintf("%d×%d", s, n))
		}
		sort.Strings(statuses)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", r.name, r.code, strings.Join(statuses, " "), len(d),
			us(d[len(d)*50/100]), us(d[min(len(d)-1, len(d)*99/100)]), us(d[len(d)-1]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ratio := float64(h.p99) / float64(a.p99)
	fmt.Fprintf(stdout, "\nnormal p99 under attack / alone: %.2f (target at most 2); slowest hostile request %s of server time (target at most 100ms); peak heap %s\n",
		ratio, us(worst), mibs(peakHeap))
	return nil
}

func us(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func mibs(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
