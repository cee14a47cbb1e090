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
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

func init() {
	registerCommand("cluster", "three cluster members on loopback against one store: the list page's read ratio on a member and on a single node, write throughput and p50/p99 at 1, 8 and 32 writers, failover after the stream's leader stops, catch-up of a wiped member from the stream and from a snapshot plus the stream's tail", func() command { return &clusterBench{} })
}

// The cluster benchmark's parts, in the order they run (-parts).
const (
	partReads    = "reads"
	partWrites   = "writes"
	partFailover = "failover"
	partCatchUp  = "catchup"
)

var clusterParts = []string{partReads, partWrites, partFailover, partCatchUp}

type clusterBench struct {
	writes    int
	incidents int
	tail      int
	dir       string
	partsFlag string          // -parts, as given
	parts     map[string]bool // -parts, checked
	// cpuProfile, if set, is where the writes part writes a CPU profile
	// of its 32 writers through the cluster.
	cpuProfile string
	load       loadFlags // the reads part's: the graphql benchmark's list page and its ratio
}

func (b *clusterBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.writes, "writes", 2000, "upserts per run (each concurrency, each setup)")
	fs.IntVar(&b.incidents, "incidents", 100_000, "incidents the wiped member catches up with")
	fs.IntVar(&b.tail, "tail", 1000, "upserts published after the snapshot, which the member that starts from it applies from the stream")
	fs.StringVar(&b.dir, "db", "", "directory for the stores (default: a temporary directory, removed afterwards)")
	fs.StringVar(&b.cpuProfile, "writes-cpuprofile", "", "write a CPU profile of the writes part's 32 writers through the cluster to this file")
	fs.StringVar(&b.partsFlag, "parts", strings.Join(clusterParts, ","), "the parts to run, comma-separated: "+strings.Join(clusterParts, ", "))
	b.load.register(fs, "the first round's list page on the cluster member", clientTransport)
}

func (b *clusterBench) check() error {
	if b.writes < 100 || b.incidents < 100 {
		return errors.New("-writes and -incidents must be at least 100")
	}
	if err := atLeast("tail", b.tail, 1); err != nil {
		return err
	}
	if err := b.load.check(); err != nil {
		return err
	}
	b.parts = map[string]bool{}
	for p := range strings.SplitSeq(b.partsFlag, ",") {
		if p = strings.TrimSpace(p); !slices.Contains(clusterParts, p) {
			return fmt.Errorf("-parts: unknown part %q (the parts: %s)", p, strings.Join(clusterParts, ", "))
		}
		b.parts[p] = true
	}
	return nil
}

func (b *clusterBench) run(ctx context.Context, stdout io.Writer) error {
	dir, done, err := workDir(b.dir, "cluster")
	if err != nil {
		return err
	}
	defer done()
	return b.runIn(ctx, dir, stdout)
}

// benchMember is one member of the benchmark's cluster.
type benchMember struct {
	name, listen, db, js string
	store                *storage.DB
	mb                   *cluster.Member
	// commits counts the store's write transactions (each one fsync).
	commits atomic.Int64
}

type benchCluster struct {
	members     []*benchMember
	peers       []string
	quiet       *slog.Logger
	recordCache int // each member's store's, in records
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func newBenchCluster(ctx context.Context, dir string, recordCache int) (*benchCluster, error) {
	c := &benchCluster{quiet: slog.New(slog.NewTextHandler(io.Discard, nil)), recordCache: recordCache}
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
	db, err := storage.Open(m.db, storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: c.recordCache,
		ObserveCommit: func(time.Duration) { m.commits.Add(1) }})
	if err != nil {
		node.Close()
		return err
	}
	tax, maxRecord := db.Incidents().RecordRules()
	mb, err := cluster.Attach(ctx, node, db.Writer(), db.Reads(), tax, maxRecord, nil)
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

func editorCtx(ctx context.Context) context.Context {
	return incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: "bench", Role: incidentlib.RoleEditor})
}

func (b *clusterBench) runIn(ctx context.Context, dir string, out io.Writer) error {
	loadavg, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(out, "cluster: parts %v, load average %s", slices.DeleteFunc(slices.Clone(clusterParts), func(p string) bool { return !b.parts[p] }), loadavg)
	c, err := newBenchCluster(ctx, dir, max(10_000, b.load.count))
	if err != nil {
		return err
	}
	defer c.close()
	if b.parts[partReads] {
		if err := b.reads(ctx, c, dir, out); err != nil {
			return fmt.Errorf("reads: %w", err)
		}
	}
	if b.parts[partWrites] {
		if err := b.writeRates(ctx, c, dir, out); err != nil {
			return fmt.Errorf("writes: %w", err)
		}
	}
	if b.parts[partFailover] {
		if err := b.failover(ctx, c, out); err != nil {
			return fmt.Errorf("failover: %w", err)
		}
	}
	if b.parts[partCatchUp] {
		if err := b.catchUp(ctx, c, out); err != nil {
			return fmt.Errorf("catch-up: %w", err)
		}
	}
	loadavg, _ = os.ReadFile("/proc/loadavg")
	fmt.Fprintf(out, "cluster: done, load average %s", loadavg)
	return nil
}

// failover stops the stream's leader and reports the time to the next
// write a remaining member has acknowledged; the stopped member then
// starts again and catches up.
func (b *clusterBench) failover(ctx context.Context, c *benchCluster, out io.Writer) error {
	incs, err := writeIncidents()
	if err != nil {
		return err
	}
	var leader *benchMember
	for _, m := range c.members {
		if _, err := m.mb.Node.LastSeq(ctx); err == nil && m.mb.Node.Leader() {
			leader = m
		}
	}
	if leader == nil {
		fmt.Fprintln(out, "failover: no member leads the stream; not measured")
		return nil
	}
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
	return leader.mb.WaitReady(ctx)
}

// catchUp imports b.incidents incidents through the cluster, then wipes
// a member (its store and its JetStream directory) and times how long it
// takes to be level again: first replaying the whole stream, then from a
// snapshot published before b.tail further upserts, which it applies
// from the stream.
func (b *clusterBench) catchUp(ctx context.Context, c *benchCluster, out io.Writer) error {
	big, err := gen.Generate(gen.Options{Count: b.incidents, Seed: 26, FirstID: 1_000_000, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		return err
	}
	for _, inc := range big {
		inc.Related, inc.RecurrenceOf = nil, ""
		inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	}
	t := time.Now()
	if err := importThrough(ctx, c, big, 10_000); err != nil {
		return err
	}
	last, err := c.members[0].mb.Node.LastSeq(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "import: %d incidents through the cluster (chunks of 10,000) in %s, applied on every member\n", b.incidents, time.Since(t).Round(time.Millisecond))
	src, wiped := c.members[0], c.members[2]
	for _, snapshot := range []bool{false, true} {
		how := "replaying the whole stream"
		if snapshot {
			at := src.mb.Applier.Applied()
			t := time.Now()
			if err := src.mb.Node.PublishSnapshot(ctx, at, "", func(w io.Writer) error { _, err := src.store.Maintenance().Backup(ctx, w); return err }); err != nil {
				return err
			}
			fmt.Fprintf(out, "snapshot: published at stream sequence %d in %s\n", at, time.Since(t).Round(time.Millisecond))
			// The stream's tail: upserts after the snapshot, through the
			// two members that stay.
			_, _, err := writeRun(ctx, big, b.tail, 8, func(ctx context.Context, i int, inc *incidentlib.Incident) error {
				_, err := c.members[i%2].mb.Writer.UpsertIncident(editorCtx(ctx), inc, incidentlib.WriteOptions{})
				return err
			})
			if err != nil {
				return err
			}
			if last, err = src.mb.Node.LastSeq(ctx); err != nil {
				return err
			}
			how = fmt.Sprintf("from the snapshot plus the stream's tail (%d writes, sequences %d to %d)", last-at, at+1, last)
		}
		c.stop(wiped)
		for _, p := range []string{wiped.db, wiped.js} {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
		t := time.Now()
		if err := c.start(ctx, wiped, true); err != nil {
			return err
		}
		if err := wiped.mb.Applier.WaitApplied(ctx, last); err != nil {
			return err
		}
		fmt.Fprintf(out, "catch-up: a wiped member (store and JetStream directory deleted) level with %d incidents %s in %s\n", b.incidents, how, time.Since(t).Round(time.Millisecond))
	}
	return nil
}

// importThrough imports incs through the first member, chunk incidents
// an import, and waits until every member has applied them.
func importThrough(ctx context.Context, c *benchCluster, incs []*incidentlib.Incident, chunk int) error {
	for i := 0; i < len(incs); i += chunk {
		_, err := c.members[0].mb.Writer.ImportIncidents(editorCtx(ctx), incs[i:min(i+chunk, len(incs))], incidentlib.ImportOptions{KeepUpdatedAt: true})
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
	return nil
}
