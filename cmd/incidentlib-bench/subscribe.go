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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

func init() {
	registerCommand("subscribe", "GraphQL subscriptions over SSE: memory per idle subscriber, delivery latency from commit to the last of many subscribers, and the writer's latency with and without them", func() command { return &subscribeBench{} })
}

type subscribeBench struct {
	idle, subs, writes, incidents int
	interval                      time.Duration
	dir                           string
	noSync                        bool
	hold                          string // child mode: hold idle subscriptions to this URL
}

func (b *subscribeBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.idle, "idle", 10_000, "idle subscribers for the memory figure, held by a child process (each side of a connection takes a file descriptor)")
	fs.IntVar(&b.subs, "subscribers", 1_000, "subscribers receiving every write, for the latency figures")
	fs.IntVar(&b.writes, "writes", 100, "writes measured with and without the subscribers, in writes")
	fs.DurationVar(&b.interval, "interval", 100*time.Millisecond, "time between writes")
	fs.IntVar(&b.incidents, "incidents", 2_000, "generated incidents in the store")
	fs.StringVar(&b.dir, "db", "", "directory for the store (default: a temporary directory, removed afterwards)")
	fs.BoolVar(&b.noSync, "nosync", false, "skip fsync at commit (the output says so)")
	fs.StringVar(&b.hold, "hold", "", "internal: hold -idle subscriptions to this URL until standard input closes")
}

func (b *subscribeBench) check() error {
	if b.hold == "" && (b.idle < 0 || b.subs < 1 || b.writes < 10 || b.interval <= 0 || b.incidents < 10) {
		return errors.New("-idle must be at least 0, -subscribers 1, -writes 10, -incidents 10 and -interval positive")
	}
	return nil
}

func (b *subscribeBench) run(ctx context.Context, stdout io.Writer) error {
	if b.hold != "" {
		return holdSubscriptions(b.hold, b.idle, stdout)
	}
	dir, done, err := workDir(b.dir, "subscribe")
	if err != nil {
		return err
	}
	defer done()
	return b.runIn(ctx, filepath.Join(dir, "subscribe.db"), stdout)
}

// raiseFileLimit raises the soft limit of open files to the hard one and
// returns it.
func raiseFileLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	l.Cur = l.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	return l.Cur
}

const benchSubscription = `{"query":"subscription { incidentChanged { seq action incidentId incident { id title updatedAt organization { name } } } }"}`

// dialSSE opens one SSE subscription on a raw connection and reads its
// response headers; the caller reads the events (or leaves it idle).
func dialSSE(addr string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	req := fmt.Sprintf("POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		addr, len(benchSubscription), benchSubscription)
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, nil, fmt.Errorf("subscription refused: %s", resp.Status)
	}
	return c, br, nil
}

// holdSubscriptions is the child: it opens n idle subscriptions, says
// "ready", and keeps them until its standard input closes.
func holdSubscriptions(addr string, n int, stdout io.Writer) error {
	raiseFileLimit()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, _, err := dialSSE(addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// serverMemory is the memory the process holds for the Go heap and the
// goroutines' stacks, after a collection.
func serverMemory() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func (b *subscribeBench) runIn(ctx context.Context, path string, out io.Writer) error {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	db, err := storage.Open(path, storage.Options{Taxonomy: tax, NoSync: b.noSync, RecordCache: 20_000})
	if err != nil {
		return err
	}
	defer db.Close()
	incs, err := gen.Generate(gen.Options{Count: b.incidents, Seed: 1, Taxonomy: tax})
	if err != nil {
		return err
	}
	if err := load(ctx, db, incs); err != nil {
		return err
	}
	limit := b.idle + b.subs + 100
	srv, ln, err := readyServer(db, server.Config{SubscriptionLimits: live.Options{MaxTotal: limit, MaxPerClient: limit}})
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer func() {
		srv.StopSubscriptions()
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	addr := ln.Addr().String()
	files := raiseFileLimit()
	syncNote := "fsync at commit"
	if b.noSync {
		syncNote = "no fsync (-nosync)"
	}
	fmt.Fprintf(out, "%d incidents, %s, GOMAXPROCS %d, open-file limit %d per process (the idle subscribers' client side runs in a child process)\n",
		b.incidents, syncNote, runtime.GOMAXPROCS(0), files)

	// Memory per idle subscriber.
	if b.idle > 0 {
		before := serverMemory()
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		child := exec.CommandContext(ctx, exe, "subscribe", "-idle", strconv.Itoa(b.idle), "-hold", addr)
		stdin, _ := child.StdinPipe()
		childOut, _ := child.StdoutPipe()
		child.Stderr = os.Stderr
		start := time.Now()
		if err := child.Start(); err != nil {
			return err
		}
		line, err := bufio.NewReader(childOut).ReadString('\n')
		if err != nil || line != "ready\n" {
			_ = child.Process.Kill()
			return fmt.Errorf("the child holding the idle subscribers: %q %v", line, err)
		}
		opened := time.Since(start)
		after := serverMemory()
		goroutines := runtime.NumGoroutine()
		per := float64(after-before) / float64(b.idle)
		fmt.Fprintf(out, "idle: %d subscribers opened in %s; server heap+stacks %s -> %s: %.1f KiB per subscriber (target <= 64 KiB); %d goroutines\n",
			b.idle, opened.Round(time.Millisecond), mib(int64(before)), mib(int64(after)), per/1024, goroutines)
		stdin.Close()
		_ = child.Wait()
		// Wait until the server has let them go.
		for i := 0; i < 500 && runtime.NumGoroutine() > goroutines-b.idle/2; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}

	// The writer alone.
	alone, _, err := b.write(ctx, db, incs, nil)
	if err != nil {
		return err
	}
	// The writer with subscribers, each reading every event.
	recv := newReceipts(b.subs)
	var wg sync.WaitGroup
	conns := make([]net.Conn, 0, b.subs)
	for i := range b.subs {
		c, br, err := dialSSE(addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			recv.read(i, br)
		}()
	}
	time.Sleep(200 * time.Millisecond) // every subscription registered
	with, commits, err := b.write(ctx, db, incs, recv)
	if err != nil {
		return err
	}
	time.Sleep(time.Second) // the last events arrive
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	var lat []time.Duration
	missing := 0
	for seq, at := range commits {
		last, n := recv.last(seq)
		if n < b.subs {
			missing++
			continue
		}
		lat = append(lat, last.Sub(at))
	}
	fmt.Fprintf(out, "delivery, commit to the last of %d subscribers, %d writes every %s: p50 %s, p99 %s, max %s; %d writes not seen by every subscriber\n",
		b.subs, len(lat), b.interval, percentile(lat, 0.50).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond),
		percentile(lat, 1).Round(time.Microsecond), missing)
	ratio := float64(percentile(with, 0.99)) / float64(percentile(alone, 0.99))
	fmt.Fprintf(out, "upsert: without subscribers p50 %s p99 %s; with %d: p50 %s p99 %s (p99 %.2fx, target <= 1.5x)\n",
		percentile(alone, 0.5).Round(time.Microsecond), percentile(alone, 0.99).Round(time.Microsecond), b.subs,
		percentile(with, 0.5).Round(time.Microsecond), percentile(with, 0.99).Round(time.Microsecond), ratio)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(out, "load average: %s", la)
	}
	return nil
}

// write upserts b.writes changed incidents, one every b.interval, and
// returns each upsert's latency and each commit's time by sequence.
func (b *subscribeBench) write(ctx context.Context, db *storage.DB, incs []*incidentlib.Incident, _ *receipts) ([]time.Duration, map[uint64]time.Time, error) {
	lat := make([]time.Duration, 0, b.writes)
	commits := make(map[uint64]time.Time, b.writes)
	tick := time.NewTicker(b.interval)
	defer tick.Stop()
	for i := range b.writes {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		inc := *incs[i%len(incs)]
		inc.Title.En = fmt.Sprintf("%s (edit %d)", incs[i%len(incs)].Title.En, time.Now().UnixNano())
		inc.UpdatedAt, inc.Review = "", incidentlib.Review{}
		start := time.Now()
		if _, err := db.Incidents().UpsertIncident(ctx, &inc, incidentlib.WriteOptions{}); err != nil {
			return nil, nil, err
		}
		end := time.Now()
		lat = append(lat, end.Sub(start))
		commits[db.Incidents().Seq()] = end
	}
	return lat, commits, nil
}

// receipts record when each subscriber received each sequence.
type receipts struct {
	mu sync.Mutex
	at map[uint64]*receipt
}

type receipt struct {
	n    int
	last time.Time
}

func newReceipts(int) *receipts { return &receipts{at: map[uint64]*receipt{}} }

var seqKey = []byte(`"seq":"`)

// read reads one subscriber's events until its connection closes.
func (r *receipts) read(_ int, br *bufio.Reader) {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			return
		}
		now := time.Now()
		i := bytes.Index(line, seqKey)
		if i < 0 {
			continue
		}
		rest := line[i+len(seqKey):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			continue
		}
		seq, err := strconv.ParseUint(string(rest[:j]), 10, 64)
		if err != nil {
			continue
		}
		r.mu.Lock()
		rc := r.at[seq]
		if rc == nil {
			rc = &receipt{}
			r.at[seq] = rc
		}
		rc.n++
		if now.After(rc.last) {
			rc.last = now
		}
		r.mu.Unlock()
	}
}

func (r *receipts) last(seq uint64) (time.Time, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rc := r.at[seq]; rc != nil {
		return rc.last, rc.n
	}
	return time.Time{}, 0
}
