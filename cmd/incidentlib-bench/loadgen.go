package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The keep-alive load generator of the graphql and cache benchmarks: a
// number of connections over loopback, each sending one request after the
// other for a while, every response checked byte for byte; the process's
// CPU time and allocations are measured with it.

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
