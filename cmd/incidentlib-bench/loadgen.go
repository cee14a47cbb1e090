package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
)

// The keep-alive load generator of the graphql and cache benchmarks: a
// number of connections over loopback, each sending one request after the
// other for a while, every response checked byte for byte; the process's
// CPU time and allocations are measured with it.

// loadFlags are the flags of a benchmark that drives the list page with
// the load generator.
type loadFlags struct {
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	concurrency int
	count       int
	seed        int64
	first       int
	gcPercent   int
	client      string
	takeTurns   bool
	prof        profiles
}

// The load generator's clients (-client).
const (
	clientTransport = "transport"
	clientConn      = "conn"
)

// register defines the flags on fs; profiled names the measurement
// -cpuprofile and -memprofile profile.
func (f *loadFlags) register(fs *flag.FlagSet, profiled, client string) {
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "how long each measurement drives one target (a duration such as 5s)")
	fs.DurationVar(&f.warmup, "warmup", time.Second, "how long each target is driven, unmeasured, before the first round")
	fs.IntVar(&f.rounds, "rounds", 3, "interleaved rounds; the median is reported (at least 1)")
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

// check refuses values out of range.
func (f *loadFlags) check() error {
	switch {
	case f.duration <= 0 || f.warmup < 0:
		return errors.New("-duration must be positive and -warmup not negative")
	case f.rounds < 1:
		return fmt.Errorf("-rounds must be at least 1, got %d", f.rounds)
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

// loadTarget is one thing the load generator drives.
type loadTarget struct {
	name   string
	method string // GET or POST; POST when empty
	url    string
	body   []byte // a POST's body, sent as application/json
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
	transport := &http.Transport{
		// Connections with receive timestamps where they can be read
		// (arrival_linux.go), for the latency to arrival.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if sc, err := stampArrivals(c); err == nil {
				return sc, nil
			}
			return c, nil
		},
		MaxIdleConns:        concurrency * 2,
		MaxIdleConnsPerHost: concurrency,
		MaxConnsPerHost:     concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &loadClient{
		http:      &http.Client{Transport: transport, Timeout: 30 * time.Second},
		transport: transport,
		ownConns:  kind == clientConn,
	}
}

func (c *loadClient) close() { c.transport.CloseIdleConnections() }

// connSender sends one target's request over one keep-alive connection,
// one request after the other, in the caller's goroutine.
type connSender struct {
	conn   net.Conn
	stamps *stampConn // conn with receive timestamps; nil where they are not read
	br     *bufio.Reader
	req    []byte // the whole request, headers and body
}

func dialTarget(ctx context.Context, t loadTarget) (*connSender, error) {
	u, err := url.Parse(t.url)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	method := t.method
	if method == "" {
		method = http.MethodPost
	}
	req := fmt.Appendf(nil, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), u.Host)
	if t.body != nil {
		req = fmt.Appendf(req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(t.body))
	}
	req = append(append(req, "\r\n"...), t.body...)
	s := &connSender{conn: conn, req: req}
	if sc, err := stampArrivals(conn); err == nil {
		s.conn, s.stamps = sc, sc
	}
	s.br = bufio.NewReaderSize(s.conn, 16<<10)
	return s, nil
}

// send sends the request once and returns the body of a 200 response,
// read into buf. After an error the connection is not usable.
func (s *connSender) send(buf []byte) ([]byte, error) {
	if _, err := s.conn.Write(s.req); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return nil, err
	}
	if resp.Close { // the next request would find the connection gone
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: the server closed the connection", resp.StatusCode)
	}
	return readOK(resp, buf)
}

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
	if t.body != nil {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, body)
	if err != nil {
		return nil, err
	}
	if t.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	return readOK(resp, buf)
}

// drive runs concurrency workers against t for d and measures them. It
// returns the first error when any request failed or answered other bytes.
func drive(ctx context.Context, client *loadClient, concurrency int, t loadTarget, d time.Duration) (result, error) {
	var wg sync.WaitGroup
	var errs atomic.Int64
	var firstErr atomic.Pointer[error]
	lat := make([][]time.Duration, concurrency)
	arrival := make([][]time.Duration, concurrency) // where the answers' arrival is known
	runtime.GC()
	if t.timer != nil {
		t.timer.take() // the requests of earlier measurements
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	start := time.Now()
	deadline := start.Add(d)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := make([]byte, 0, len(t.want)+512)
			// stamps is the connection the answer came on, when its
			// arrival can be read. Through the transport it is the one
			// the request got from the pool: it goes back to the pool
			// when the answer's body is read, so another worker's next
			// answer could reach it before this worker reads its
			// arrival, which would only make the latency longer.
			var stamps *stampConn
			var send func() ([]byte, error)
			if client.ownConns {
				s, err := dialTarget(ctx, t)
				if err != nil {
					if errs.Add(1) == 1 {
						firstErr.Store(&err)
					}
					return
				}
				defer s.conn.Close()
				stamps = s.stamps
				send = func() ([]byte, error) { return s.send(buf) }
			} else {
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { stamps, _ = i.Conn.(*stampConn) }}
				tctx := httptrace.WithClientTrace(ctx, trace)
				send = func() ([]byte, error) { stamps = nil; return t.do(tctx, client.http, buf) }
			}
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					return
				}
				resp, err := send()
				lat[w] = append(lat[w], time.Since(t0))
				if stamps != nil && err == nil {
					if a := stamps.arrived(); !a.Before(t0) { // a zero time is before
						arrival[w] = append(arrival[w], a.Sub(t0))
					}
				}
				if err == nil && t.want != nil && !bytes.Equal(resp, t.want) {
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
		errors:   int(errs.Load()),
		elapsed:  elapsed,
		p50:      all[len(all)*50/100],
		p99:      all[min(len(all)-1, len(all)*99/100)],
		cpu:      time.Duration(cpu / int64(len(all))),
		allocs:   float64(after.Mallocs-before.Mallocs) / float64(len(all)),
		bytes:    float64(after.TotalAlloc-before.TotalAlloc) / float64(len(all)),
	}
	// The latency to arrival only when every answer's arrival is known.
	if arr := sortedLatencies(arrival); len(arr) == len(all) {
		r.arrivalP50, r.arrivalP99 = arr[len(arr)*50/100], arr[min(len(arr)-1, len(arr)*99/100)]
	}
	if t.timer != nil {
		if in := t.timer.take(); len(in) > 0 {
			r.inHandlerP50, r.inHandlerP99 = in[len(in)*50/100], in[min(len(in)-1, len(in)*99/100)]
		}
	}
	if p := firstErr.Load(); p != nil {
		return r, *p
	}
	return r, nil
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

// profiles writes a CPU profile (to cpu) and allocation profiles before
// (mem.base) and after (mem) one measurement; empty names write nothing.
type profiles struct {
	cpu, mem, trace    string
	cpuFile, traceFile *os.File
}

func (p *profiles) start() error {
	if p.mem != "" {
		if err := writeAllocs(p.mem + ".base"); err != nil {
			return err
		}
	}
	if p.trace != "" {
		f, err := os.Create(p.trace)
		if err != nil {
			return err
		}
		p.traceFile = f
		if err := trace.Start(f); err != nil {
			return err
		}
	}
	if p.cpu == "" {
		return nil
	}
	f, err := os.Create(p.cpu)
	if err != nil {
		return err
	}
	p.cpuFile = f
	return pprof.StartCPUProfile(f)
}

func (p *profiles) stop() error {
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			return err
		}
		p.cpuFile = nil
	}
	if p.traceFile != nil {
		trace.Stop()
		if err := p.traceFile.Close(); err != nil {
			return err
		}
		p.traceFile = nil
	}
	if p.mem != "" {
		return writeAllocs(p.mem)
	}
	return nil
}

func writeAllocs(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
