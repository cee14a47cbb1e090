package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// The keep-alive load generator of the graphql and cache benchmarks: a
// number of connections over loopback, each sending one request after the
// other for a while, every response checked byte for byte; the process's
// CPU time and allocations are measured with it.

// loadFlags are the flags of a benchmark that drives the list page with
// the load generator.
type loadFlags struct {
	phases      phaseFlags
	concurrency int
	count       int
	seed        int64
	first       int
	gcPercent   int
	client      string
	takeTurns   bool
	prof        profiles
}

// phaseFlags are the flags of a benchmark measured in interleaved rounds
// of timed phases: -duration (default 5s) of a measured phase, -warmup
// (default 1s) driven unmeasured first, and -rounds (default 3), whose
// median is reported.
type phaseFlags struct {
	duration time.Duration
	warmup   time.Duration
	rounds   int
}

// declare defines -duration, -warmup and -rounds on fs with the
// benchmark's words for each.
func (p *phaseFlags) declare(fs *flag.FlagSet, durationUsage, warmupUsage, roundsUsage string) {
	fs.DurationVar(&p.duration, "duration", 5*time.Second, durationUsage)
	fs.DurationVar(&p.warmup, "warmup", time.Second, warmupUsage)
	fs.IntVar(&p.rounds, "rounds", 3, roundsUsage)
}

// check refuses values out of range.
func (p *phaseFlags) check() error {
	switch {
	case p.duration <= 0 || p.warmup < 0:
		return errors.New("-duration must be positive and -warmup not negative")
	case p.rounds < 1:
		return fmt.Errorf("-rounds must be at least 1, got %d", p.rounds)
	}
	return nil
}

// The load generator's clients (-client).
const (
	clientTransport = "transport"
	clientConn      = "conn"
)

// register defines the flags on fs; profiled names the measurement
// -cpuprofile and -memprofile profile.
func (f *loadFlags) register(fs *flag.FlagSet, profiled, client string) {
	f.phases.declare(fs, "how long each measurement drives one target (a duration such as 5s)", "how long each target is driven, unmeasured, before the first round", "interleaved rounds; the median is reported (at least 1)")
	fs.IntVar(&f.concurrency, "concurrency", 32, "concurrent keep-alive connections (at least 1)")
	fs.IntVar(&f.count, "count", 10_000, "generated incidents in the store (at least 100)")
	fs.Int64Var(&f.seed, "seed", 1, "generator seed")
	fs.IntVar(&f.first, "first", 20, "page size of the list page, 1 to 100")
	fs.IntVar(&f.gcPercent, "gc-percent", server.DefaultGCPercent, "garbage collector budget in percent of the live heap, as serve --gc-percent")
	fs.StringVar(&f.client, "client", client, clientTransport+": each worker sends through one net/http client (its connection pool, a reader and a writer goroutine per connection); "+
		clientConn+": each worker writes its requests to a connection of its own and reads the answers with http.ReadResponse, in its own goroutine (less of the load generator's CPU in every figure)")
	fs.BoolVar(&f.takeTurns, "take-turns", false, "the servers measured take turns as serve --take-turns does (server.TakeTurns); the static handlers never do")
	fs.StringVar(&f.prof.cpu, "cpuprofile", "", "write a CPU profile of "+profiled+" to this file")
	fs.StringVar(&f.prof.trace, "trace", "", "write an execution trace of "+profiled+" to this file (scheduler waits: go tool trace -pprof=sched FILE)")
	fs.StringVar(&f.prof.mem, "memprofile", "", "write allocation profiles before (FILE.base) and after "+profiled+": go tool pprof -diff_base FILE.base FILE")
}

// openGenerated sets the collector's budget to -gc-percent and opens a
// temporary store of -count incidents generated with -seed
// (tempGenerated); done closes and removes the store and restores the
// budget.
func (f *loadFlags) openGenerated(ctx context.Context, name string, stdout io.Writer) (db *storage.DB, incs []*incidentlib.Incident, done func(), err error) {
	old := debug.SetGCPercent(f.gcPercent)
	db, incs, closeStore, err := tempGenerated(ctx, name, f.count, f.seed, stdout)
	if err != nil {
		debug.SetGCPercent(old)
		return nil, nil, nil, err
	}
	return db, incs, func() { closeStore(); debug.SetGCPercent(old) }, nil
}

// check refuses values out of range.
func (f *loadFlags) check() error {
	if err := f.phases.check(); err != nil {
		return err
	}
	switch {
	case f.concurrency < 1:
		return fmt.Errorf("-concurrency must be at least 1, got %d", f.concurrency)
	case f.count < 100:
		return fmt.Errorf("-count must be at least 100, got %d", f.count)
	case f.first < 1 || f.first > incidentlib.MaxPageSize:
		return fmt.Errorf("-first must be 1 to %d, got %d", incidentlib.MaxPageSize, f.first)
	case f.client != clientTransport && f.client != clientConn:
		return fmt.Errorf("-client must be %s or %s, got %q", clientTransport, clientConn, f.client)
	case f.gcPercent < server.MinGCPercent || f.gcPercent > server.MaxGCPercent:
		return fmt.Errorf("-gc-percent must be %d to %d, got %d", server.MinGCPercent, server.MaxGCPercent, f.gcPercent)
	}
	return nil
}

// printSettings prints the machine's and the flags' settings of a
// measurement, as its first line, headed by the benchmark's name.
func (f *loadFlags) printSettings(w io.Writer, name string) {
	fmt.Fprintf(w, "%s: GOMAXPROCS=%d NumCPU=%d %s gc-percent=%d concurrency=%d client=%s take-turns=%v duration=%s rounds=%d\n",
		name, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(), f.gcPercent, f.concurrency, f.client, f.takeTurns, f.phases.duration, f.phases.rounds)
}

// warmUp drives each of targets, unmeasured, for -warmup.
func (f *loadFlags) warmUp(ctx context.Context, client *loadClient, targets []loadTarget) error {
	for _, t := range targets {
		if _, err := drive(ctx, client, f.concurrency, t, f.phases.warmup); err != nil {
			return fmt.Errorf("warm-up %s: %w", t.name, err)
		}
	}
	return nil
}

// measureRounds measures each of targets in turn for -duration, -rounds
// times (interleaved rounds), with the profiles of -cpuprofile, -trace
// and -memprofile on the first round's measurement of targets[profiled]
// (-1: none). After each measurement, each is called with the round (from
// 0), the target's index and the results so far, by target in round
// order (the new one is results[i][round]); its error ends the rounds.
func (f *loadFlags) measureRounds(ctx context.Context, client *loadClient, targets []loadTarget, profiled int, each func(round, i int, results [][]result) error) ([][]result, error) {
	results := make([][]result, len(targets))
	for round := range f.phases.rounds {
		for i, t := range targets {
			var prof *profiles
			if round == 0 && i == profiled {
				prof = &f.prof
			}
			r, err := measure(ctx, client, f.concurrency, t, f.phases.duration, prof)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, t.name, err)
			}
			results[i] = append(results[i], r)
			if err := each(round, i, results); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}

// loadTarget is one thing the load generator drives.
type loadTarget struct {
	name   string
	method string // GET or POST; POST when empty
	url    string
	body   []byte // a POST's body, sent as application/json
	// bodies, when set, are sent in turn instead of body (a frontend's
	// filter varied per request: loadvary.go); each must give want.
	bodies [][]byte
	// want is the exact response expected, when known; without it any 200
	// passes.
	want []byte
	// timer, when set, times the requests inside the target's handler.
	timer *handlerTimer
}

// handlerTimer times each request inside a handler, from the call to its
// return: the server's own part of the latency the load generator sees,
// without the waits for a core before the handler runs and after it.
type handlerTimer struct {
	h  http.Handler
	mu sync.Mutex
	d  []time.Duration
}

func (t *handlerTimer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	t.h.ServeHTTP(w, r)
	d := time.Since(start)
	t.mu.Lock()
	t.d = append(t.d, d)
	t.mu.Unlock()
}

// take returns the times since the last take, sorted, and forgets them.
func (t *handlerTimer) take() []time.Duration {
	t.mu.Lock()
	d := t.d
	t.d = nil
	t.mu.Unlock()
	slices.Sort(d)
	return d
}

// result is one measurement of one target.
type result struct {
	requests int
	errors   int
	elapsed  time.Duration
	p50, p99 time.Duration
	// inHandler: p50 and p99 of the time inside the handler (with a
	// timer), 0 without.
	inHandlerP50, inHandlerP99 time.Duration
	// arrivalP50, arrivalP99: latency to the arrival of the answer's last
	// bytes in the client's socket (on Linux; 0 elsewhere).
	arrivalP50, arrivalP99 time.Duration
	cpu                    time.Duration // process CPU time per request (servers and load generator), 0 if unknown
	allocs, bytes          float64       // per request, the whole process
}

func (r result) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// loadClient is how the workers send their requests (-client).
type loadClient struct {
	http      *http.Client
	transport *http.Transport
	// ownConns: each worker dials a connection of its own for a target
	// and sends on it without http.Client.
	ownConns bool
}

// newLoadClient is a client for concurrency workers; close it when done.
func newLoadClient(concurrency int, kind string) *loadClient {
	transport := benchTransport(concurrency)
	transport.MaxIdleConns = concurrency * 2 // the targets are on several hosts
	// Connections with receive timestamps where they can be read
	// (arrival_linux.go), for the latency to arrival.
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if sc, err := stampArrivals(c); err == nil {
			return sc, nil
		}
		return c, nil
	}
	return &loadClient{
		http:      &http.Client{Transport: transport, Timeout: 30 * time.Second},
		transport: transport,
		ownConns:  kind == clientConn,
	}
}

func (c *loadClient) close() { c.transport.CloseIdleConnections() }

// readOK reads resp's body into buf and closes it; any status but 200 is an
// error quoting the body.
func readOK(resp *http.Response, buf []byte) ([]byte, error) {
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

// do sends t's request once and returns the body of a 200 response, read
// into buf.
func (t loadTarget) do(ctx context.Context, client *http.Client, buf []byte) ([]byte, error) {
	method := t.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	b := t.anyBody()
	if b != nil {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, body)
	if err != nil {
		return nil, err
	}
	if b != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	return readOK(resp, buf)
}

// loadWorker is one connection's part of a keep-alive load. send sends
// one request and waits for its answer: the time it takes is the
// request's latency. checked, when set, then judges the answer outside
// that time and returns the request's error; close, when set, is called
// when the worker stops.
type loadWorker struct {
	send    func() error
	checked func(t0 time.Time, err error) error
	close   func()
}

// keepAlive is the one keep-alive load loop of the harness: workers
// goroutines, each made by newWorker, send one request after the other
// until ctx is done or, when deadline is not zero, until the next request
// would start after it. Without a deadline, ctx's end is the run's, and
// the request it cuts short is not counted. It returns the latencies of
// every worker, how many requests failed (a worker newWorker could not
// make counts as one) and the first failure.
func keepAlive(ctx context.Context, workers int, deadline time.Time, newWorker func(w int) (loadWorker, error)) (lat [][]time.Duration, failed int, first error) {
	var wg sync.WaitGroup
	var errs atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) {
		if errs.Add(1) == 1 {
			firstErr.Store(&err)
		}
	}
	lat = make([][]time.Duration, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lw, err := newWorker(w)
			if err != nil {
				fail(err)
				return
			}
			if lw.close != nil {
				defer lw.close()
			}
			for ctx.Err() == nil {
				t0 := time.Now()
				if !deadline.IsZero() && t0.After(deadline) {
					return
				}
				err := lw.send()
				d := time.Since(t0)
				if deadline.IsZero() && ctx.Err() != nil {
					return // cut short by the end of the run
				}
				lat[w] = append(lat[w], d)
				if lw.checked != nil {
					err = lw.checked(t0, err)
				}
				if err != nil {
					fail(err)
				}
			}
		}(w)
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		first = *p
	}
	return lat, int(errs.Load()), first
}

// drive runs concurrency workers against t for d and measures them. It
// returns the first error when any request failed or answered other bytes.
func drive(ctx context.Context, client *loadClient, concurrency int, t loadTarget, d time.Duration) (result, error) {
	arrival := make([][]time.Duration, concurrency) // where the answers' arrival is known
	runtime.GC()
	if t.timer != nil {
		t.timer.take() // the requests of earlier measurements
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	start := time.Now()
	lat, failed, firstErr := keepAlive(ctx, concurrency, start.Add(d), func(w int) (loadWorker, error) {
		buf := make([]byte, 0, len(t.want)+512)
		var resp []byte
		// stamps is the connection the answer came on, when its arrival
		// can be read. Through the transport it is the one the request
		// got from the pool: it goes back to the pool when the answer's
		// body is read, so another worker's next answer could reach it
		// before this worker reads its arrival, which would only make the
		// latency longer.
		var stamps *stampConn
		lw := loadWorker{checked: func(t0 time.Time, err error) error {
			if stamps != nil && err == nil {
				if a := stamps.arrived(); !a.Before(t0) { // a zero time is before
					arrival[w] = append(arrival[w], a.Sub(t0))
				}
			}
			if err == nil && t.want != nil && !bytes.Equal(resp, t.want) {
				err = fmt.Errorf("the response differs from the reference: %.200s", resp)
			}
			if resp != nil {
				buf = resp[:0]
			}
			return err
		}}
		if client.ownConns {
			s, err := dialTarget(ctx, t)
			if err != nil {
				return loadWorker{}, err
			}
			stamps = s.stamps
			lw.send = func() (err error) { resp, err = s.send(buf); return err }
			lw.close = func() { s.conn.Close() }
		} else {
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { stamps, _ = i.Conn.(*stampConn) }}
			tctx := httptrace.WithClientTrace(ctx, trace)
			lw.send = func() (err error) { stamps = nil; resp, err = t.do(tctx, client.http, buf); return err }
		}
		return lw, nil
	})
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0 // the whole process: servers and load generator (cpu_unix.go)
	runtime.ReadMemStats(&after)
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	all := sortedLatencies(lat)
	if len(all) == 0 {
		return result{}, errors.New("no request finished")
	}
	r := result{
		requests: len(all),
		errors:   failed,
		elapsed:  elapsed,
		cpu:      time.Duration(cpu / int64(len(all))),
		allocs:   float64(after.Mallocs-before.Mallocs) / float64(len(all)),
		bytes:    float64(after.TotalAlloc-before.TotalAlloc) / float64(len(all)),
	}
	r.p50, r.p99 = percentiles(all)
	// The latency to arrival only when every answer's arrival is known.
	if arr := sortedLatencies(arrival); len(arr) == len(all) {
		r.arrivalP50, r.arrivalP99 = percentiles(arr)
	}
	if t.timer != nil {
		if in := t.timer.take(); len(in) > 0 {
			r.inHandlerP50, r.inHandlerP99 = percentiles(in)
		}
	}
	return r, firstErr
}

// percentiles returns the median and the 99th percentile of sorted, which
// is not empty.
func percentiles(sorted []time.Duration) (p50, p99 time.Duration) {
	return sorted[len(sorted)*50/100], sorted[min(len(sorted)-1, len(sorted)*99/100)]
}

// median returns the measurement with the median throughput.
func median(rs []result) result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b result) int {
		switch {
		case a.rps() < b.rps():
			return -1
		case a.rps() > b.rps():
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

// medianCPU is the median of the CPU time per request of rs.
func medianCPU(rs []result) time.Duration {
	ds := make([]time.Duration, len(rs))
	for i, r := range rs {
		ds[i] = r.cpu
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// measure drives t for d, under p's profiles when p is not nil.
func measure(ctx context.Context, client *loadClient, concurrency int, t loadTarget, d time.Duration, p *profiles) (result, error) {
	if p != nil {
		if err := p.start(); err != nil {
			return result{}, err
		}
	}
	r, err := drive(ctx, client, concurrency, t, d)
	if p != nil {
		if perr := p.stop(); perr != nil && err == nil {
			err = perr
		}
	}
	return r, err
}

// sortedLatencies is every worker's latencies in one sorted list.
func sortedLatencies(lat [][]time.Duration) []time.Duration {
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	return all
}
