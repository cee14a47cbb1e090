package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

func init() {
	register("cluster", "three cluster members on loopback against one store: write throughput and p50/p99 at 1, 8 and 32 writers, failover after the stream's leader stops, catch-up of a wiped member", runCluster)
}

type clusterBench struct {
	writes    int
	incidents int
	dir       string
}

func runCluster(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var b clusterBench
	fs.IntVar(&b.writes, "writes", 2000, "upserts per run (each concurrency, each setup)")
	fs.IntVar(&b.incidents, "incidents", 100_000, "incidents the wiped member catches up with")
	fs.StringVar(&b.dir, "db", "", "directory for the stores (default: a temporary directory, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if b.writes < 100 || b.incidents < 100 {
		return errors.New("-writes and -incidents must be at least 100")
	}
	dir, done, err := workDir(b.dir, "cluster")
	if err != nil {
		return err
	}
	defer done()
	return b.run(ctx, dir, stdout)
}

// benchMember is one member of the benchmark's cluster.
type benchMember struct {
	name, listen, db, js string
	store                *storage.DB
	mb                   *cluster.Member
}

type benchCluster struct {
	members []*benchMember
	peers   []string
	quiet   *slog.Logger
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func newBenchCluster(ctx context.Context, dir string) (*benchCluster, error) {
	c := &benchCluster{quiet: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i := range 3 {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		m := &benchMember{name: fmt.Sprintf("m%d", i+1), listen: addr, db: filepath.Join(dir, fmt.Sprintf("m%d.db", i+1))}
		m.js = m.db + ".jetstream"
		c.members = append(c.members, m)
		c.peers = append(c.peers, addr)
	}
	for _, m := range c.members {
		if err := c.start(ctx, m, false); err != nil {
			c.close()
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := m.mb.WaitReady(ctx); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

func (c *benchCluster) config(m *benchMember) cluster.Config {
	return cluster.Config{ClusterName: "bench", NodeName: m.name, Listen: m.listen, Peers: c.peers, Secret: "the-benchmark-cluster-secret",
		StoreDir: m.js, WriteTimeout: 10 * time.Second, StartTimeout: time.Minute, Logger: c.quiet}
}

// start starts member m; with bootstrap, one without a store file starts
// from the cluster's snapshot.
func (c *benchCluster) start(ctx context.Context, m *benchMember, bootstrap bool) error {
	node, err := cluster.Start(ctx, c.config(m))
	if err != nil {
		return err
	}
	if _, err := os.Stat(m.db); bootstrap && errors.Is(err, os.ErrNotExist) {
		if _, _, err := node.Bootstrap(ctx, m.db, 0); err != nil {
			node.Close()
			return err
		}
	}
	db, err := storage.Open(m.db, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		node.Close()
		return err
	}
	tax, maxRecord := db.RecordRules()
	mb, err := cluster.Attach(ctx, node, db, db, tax, maxRecord, nil)
	if err != nil {
		db.Close()
		return err
	}
	m.store, m.mb = db, mb
	return nil
}

func (c *benchCluster) stop(m *benchMember) {
	if m.mb != nil {
		m.mb.Close()
		m.mb = nil
	}
	if m.store != nil {
		m.store.Close()
		m.store = nil
	}
}

func (c *benchCluster) close() {
	for _, m := range c.members {
		c.stop(m)
	}
}

// writeRun sends n upserts from writers concurrent clients through write
// and returns the rate and the latencies.
func writeRun(ctx context.Context, incs []*incidentlib.Incident, n, writers int, write func(ctx context.Context, i int, inc *incidentlib.Incident) error) (float64, []time.Duration, error) {
	var next atomic.Int64
	lat := make([][]time.Duration, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				inc := *incs[i%len(incs)]
				inc.Title.En = fmt.Sprintf("write %d", i)
				t := time.Now()
				if err := write(ctx, i, &inc); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(t))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return float64(len(all)) / el.Seconds(), all, errors.Join(errs...)
}

func editorCtx(ctx context.Context) context.Context {
	return incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: "bench", Role: incidentlib.RoleEditor})
}

func (b *clusterBench) run(ctx context.Context, dir string, out io.Writer) error {
	tax := seeds.MustTaxonomy()
	incs, err := gen.Generate(gen.Options{Count: 500, Seed: 25, FirstID: 1, Taxonomy: tax})
	if err != nil {
		return err
	}
	for _, inc := range incs {
		inc.Related, inc.RecurrenceOf = nil, ""
		inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	}
	loadavg, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(out, "cluster: %d upserts per run, load average %s", b.writes, loadavg)

	single, err := storage.Open(filepath.Join(dir, "single.db"), storage.Options{Taxonomy: tax})
	if err != nil {
		return err
	}
	c, err := newBenchCluster(ctx, dir)
	if err != nil {
		single.Close()
		return err
	}
	defer c.close()
	fmt.Fprintf(out, "%-8s %8s %12s %10s %10s\n", "setup", "writers", "writes/s", "p50", "p99")
	for _, writers := range []int{1, 8, 32} {
		rate, lat, err := writeRun(ctx, incs, b.writes, writers, func(ctx context.Context, _ int, inc *incidentlib.Incident) error {
			_, err := single.UpsertIncident(editorCtx(ctx), inc, incidentlib.WriteOptions{})
			return err
		})
		if err != nil {
			single.Close()
			return err
		}
		fmt.Fprintf(out, "%-8s %8d %12.0f %10s %10s\n", "single", writers, rate, percentile(lat, 0.5).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond))
		rate, lat, err = writeRun(ctx, incs, b.writes, writers, func(ctx context.Context, i int, inc *incidentlib.Incident) error {
			_, err := c.members[i%3].mb.Writer.UpsertIncident(editorCtx(ctx), inc, incidentlib.WriteOptions{})
			return err
		})
		if err != nil {
			single.Close()
			return err
		}
		fmt.Fprintf(out, "%-8s %8d %12.0f %10s %10s\n", "cluster", writers, rate, percentile(lat, 0.5).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond))
	}
	single.Close()

	// Failover: the stream's leader stops; the time to the next write a
	// remaining member has acknowledged.
	var leader *benchMember
	for _, m := range c.members {
		if _, err := m.mb.Node.LastSeq(ctx); err == nil && m.mb.Node.Leader() {
			leader = m
		}
	}
	if leader != nil {
		var other *benchMember
		for _, m := range c.members {
			if m != leader {
				other = m
				break
			}
		}
		start := time.Now()
		stopped := make(chan struct{})
		go func() { c.stop(leader); close(stopped) }() // its shutdown takes long; the others go on meanwhile
		for {
			// Short attempts: the figure is the election, not the write timeout.
			actx, cancel := context.WithTimeout(editorCtx(ctx), 250*time.Millisecond)
			_, err := other.mb.Writer.UpsertIncident(actx, incs[0], incidentlib.WriteOptions{})
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		fmt.Fprintf(out, "failover: %s after the stream's leader (%s) began to stop, to the next acknowledged write\n", time.Since(start).Round(time.Millisecond), leader.name)
		<-stopped
		if err := c.start(ctx, leader, false); err != nil {
			return err
		}
		if err := leader.mb.WaitReady(ctx); err != nil {
			return err
		}
	}

	// Catch-up of a wiped member holding b.incidents incidents: from a
	// snapshot, and by replaying the stream.
	big, err := gen.Generate(gen.Options{Count: b.incidents, Seed: 26, FirstID: 10_000, Taxonomy: tax})
	if err != nil {
		return err
	}
	for _, inc := range big {
		inc.Related, inc.RecurrenceOf = nil, ""
	}
	t := time.Now()
	for i := 0; i < len(big); i += 10_000 {
		_, err := c.members[0].mb.Writer.ImportIncidents(editorCtx(ctx), big[i:min(i+10_000, len(big))], incidentlib.ImportOptions{KeepUpdatedAt: true})
		if err != nil && incidentlib.ErrorCode(err) != incidentlib.EOUTCOMEUNKNOWN { // acknowledged, applied later: waited for below
			return err
		}
	}
	last, err := c.members[0].mb.Node.LastSeq(ctx)
	if err != nil {
		return err
	}
	for _, m := range c.members {
		if err := m.mb.Applier.WaitApplied(ctx, last); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "import: %d incidents through the cluster (chunks of 10,000) in %s, applied on every member\n", b.incidents, time.Since(t).Round(time.Millisecond))
	for _, snapshot := range []bool{false, true} {
		src, wiped := c.members[0], c.members[2]
		if snapshot {
			if err := src.mb.Node.PublishSnapshot(ctx, src.mb.Applier.Applied(), func(w io.Writer) error { _, err := src.store.Backup(ctx, w); return err }); err != nil {
				return err
			}
		}
		c.stop(wiped)
		if err := os.Remove(wiped.db); err != nil {
			return err
		}
		t := time.Now()
		if err := c.start(ctx, wiped, true); err != nil {
			return err
		}
		if err := wiped.mb.Applier.WaitApplied(ctx, last); err != nil {
			return err
		}
		how := "replaying the stream"
		if snapshot {
			how = "from a snapshot"
		}
		fmt.Fprintf(out, "catch-up: a wiped member level with %d incidents %s in %s\n", b.incidents, how, time.Since(t).Round(time.Millisecond))
	}
	return nil
}
