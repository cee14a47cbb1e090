package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/replica"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

func init() {
	registerCommand("replicate", "a replica copies a primary over loopback (records/s, connections); the outbound client with keep-alive against without", func() command { return &replicateBench{} })
}

type replicateBench struct {
	count       int
	seed        int64
	page        int
	fsync       bool
	requests    int
	concurrency int
	rounds      int
	cpuProfile  string
}

func (b *replicateBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.count, "count", 20_000, "generated incidents in the primary (at least 100; the README figure is for 100000)")
	fs.Int64Var(&b.seed, "seed", 1, "generator seed")
	fs.IntVar(&b.page, "page", replica.MaxPageSize, fmt.Sprintf("changes per feed request and replica transaction, 1 to %d", replica.MaxPageSize))
	fs.BoolVar(&b.fsync, "fsync", true, "the replica syncs each transaction to disk, as serve does")
	fs.IntVar(&b.requests, "requests", 3000, "requests per keep-alive measurement (each without keep-alive is a new TCP connection)")
	fs.IntVar(&b.concurrency, "concurrency", 32, "concurrent requests of the keep-alive measurement")
	fs.IntVar(&b.rounds, "rounds", 3, "interleaved keep-alive rounds; the median is reported")
	fs.StringVar(&b.cpuProfile, "cpuprofile", "", "write a CPU profile of the replication (primary and replica) to this file")
}

func (b *replicateBench) check() error {
	switch {
	case b.count < 100:
		return fmt.Errorf("-count must be at least 100, got %d", b.count)
	case b.page < 1 || b.page > replica.MaxPageSize:
		return fmt.Errorf("-page must be 1 to %d, got %d", replica.MaxPageSize, b.page)
	case b.requests < 100:
		return fmt.Errorf("-requests must be at least 100, got %d", b.requests)
	case b.concurrency < 1 || b.concurrency > 64:
		return fmt.Errorf("-concurrency must be 1 to 64 (the client's pool per host), got %d", b.concurrency)
	case b.rounds < 1:
		return fmt.Errorf("-rounds must be at least 1, got %d", b.rounds)
	}
	return nil
}

// countingListener counts the TCP connections a server accepts.
type acceptCounter struct {
	net.Listener
	n atomic.Int64
}

func (l *acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func (b *replicateBench) run(ctx context.Context, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "incidentlib-replicate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(stdout, "replicate: generating and importing %d incidents into the primary (seed %d)\n", b.count, b.seed)
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	// UpstreamLinks only so that a batch may link to incidents of a later
	// one while the primary is filled; every link resolves in the end.
	primary, err := storage.Open(filepath.Join(dir, "primary.db"), storage.Options{Taxonomy: tax, RecordCache: 10_000, NoSync: true, UpstreamLinks: true})
	if err != nil {
		return err
	}
	defer primary.Close()
	incs, err := gen.Generate(gen.Options{Count: b.count, Seed: b.seed, Taxonomy: tax})
	if err != nil {
		return err
	}
	// In transactions of 2,000: one transaction of 100,000 records keeps
	// every index page in memory unsplit until the commit, and inserting
	// into those pages costs more the more they hold.
	t0 := time.Now()
	for i := 0; i < len(incs); i += 2000 {
		if _, err := primary.Incidents().ImportIncidents(ctx, incs[i:min(i+2000, len(incs))], incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			return err
		}
	}
	incs = nil
	fmt.Fprintf(stdout, "replicate: the primary holds %d incidents (filled in %s)\n", b.count, time.Since(t0).Round(time.Millisecond))
	srv, ln, err := readyServer(primary, server.Config{Prod: true})
	if err != nil {
		return err
	}
	counter := &acceptCounter{Listener: ln}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go func() { _ = hs.Serve(counter) }()
	defer hs.Close()
	base := "http://" + ln.Addr().String()

	// 1. Replication: an empty replica follows the primary until level.
	rdb, err := storage.Open(filepath.Join(dir, "replica.db"), storage.Options{Taxonomy: tax, RecordCache: 10_000, NoSync: !b.fsync})
	if err != nil {
		return err
	}
	defer rdb.Close()
	client, err := outbound.New(outbound.DefaultConfig(), nil)
	if err != nil {
		return err
	}
	cfg := replica.DefaultConfig(base)
	cfg.PageSize = b.page
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	f, err := replica.New(ctx, rdb.Follower(), client, cfg, nil)
	if err != nil {
		return err
	}
	if b.cpuProfile != "" {
		pf, err := os.Create(b.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pf.Close()
	}
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		_ = f.Run(fctx)
	}()
	err = f.WaitSeq(ctx, primary.Incidents().Seq())
	took := time.Since(start)
	if b.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	stop()
	wg.Wait()
	if err != nil {
		return err
	}
	st, cs := f.Status(), client.Stats()
	client.Close()
	same, err := sameExport(ctx, primary, rdb)
	if err != nil {
		return err
	}
	if !same {
		return errors.New("the replica's export differs from the primary's")
	}
	if links, err := primary.Incidents().UpstreamLinks(ctx); err != nil || len(links) > 0 {
		return fmt.Errorf("the generated library has %d links to incidents it does not hold (%v)", len(links), err)
	}
	fmt.Fprintf(stdout, "replication: %d incidents in %s = %.0f records/s; %d feed requests of up to %d changes; %d TCP connections accepted by the primary (outbound: %d new, %d reused); replica fsync %v; exports identical\n",
		st.Applied, took.Round(time.Millisecond), float64(st.Applied)/took.Seconds(), st.Requests, b.page,
		counter.n.Load(), cs.NewConns, cs.ReusedConns, b.fsync)

	// 2. The outbound client against the primary's REST API, with
	// keep-alive and without, interleaved.
	ids := make([]string, 0, 1000)
	for i := range min(1000, b.count) {
		ids = append(ids, incidentlib.FormatID(uint32(i+1)))
	}
	for _, target := range []struct{ name, path string }{
		{"GET /api/v1/incidents/{id}", "/api/v1/incidents/"},
		{"GET /healthz", "/healthz"},
	} {
		var on, off []float64
		var onConns, offConns int64
		for round := range b.rounds {
			for _, disable := range []bool{false, true} {
				before := counter.n.Load()
				rps, err := b.drive(ctx, base, target.path, ids, disable)
				if err != nil {
					return err
				}
				conns := counter.n.Load() - before
				if disable {
					off, offConns = append(off, rps), conns
				} else {
					on, onConns = append(on, rps), conns
				}
				fmt.Fprintf(stdout, "  %s round %d keep-alive %-5v %8.0f requests/s, %d connections\n", target.name, round+1, !disable, rps, conns)
			}
		}
		mOn, mOff := medianF(on), medianF(off)
		fmt.Fprintf(stdout, "keep-alive: %d %s at concurrency %d: %.0f requests/s over %d connections; without keep-alive %.0f requests/s over %d connections; ratio %.1fx (median of %d rounds)\n",
			b.requests, target.name, b.concurrency, mOn, onConns, mOff, offConns, mOn/mOff, b.rounds)
	}
	return nil
}

// drive sends b.requests GETs of path (an incident's when it ends in /) through a fresh outbound client
// at b.concurrency, and returns requests per second.
func (b *replicateBench) drive(ctx context.Context, base, path string, ids []string, disableKeepAlives bool) (float64, error) {
	cfg := outbound.DefaultConfig()
	cfg.DisableKeepAlives = disableKeepAlives
	client, err := outbound.New(cfg, nil)
	if err != nil {
		return 0, err
	}
	defer client.Close()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range b.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.requests) || ctx.Err() != nil {
					return
				}
				u := base + path
				if strings.HasSuffix(path, "/") {
					u += ids[i%int64(len(ids))]
				}
				body, code, _, err := client.Get(ctx, u)
				if err == nil && (code != http.StatusOK || len(body) == 0) {
					err = fmt.Errorf("status %d", code)
				}
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, err
	}
	return float64(b.requests) / time.Since(start).Seconds(), ctx.Err()
}

func sameExport(ctx context.Context, a, b *storage.DB) (bool, error) {
	sum := func(db *storage.DB) ([]byte, error) {
		h := sha256.New()
		err := db.Maintenance().Export(ctx, h)
		return h.Sum(nil), err
	}
	x, err := sum(a)
	if err != nil {
		return false, err
	}
	y, err := sum(b)
	return bytes.Equal(x, y), err
}

func medianF(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
