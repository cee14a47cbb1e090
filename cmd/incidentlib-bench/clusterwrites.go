package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// The cluster benchmark's writes part: upserts through the members
// against upserts into one store, at 1, 8 and 32 writers.

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

// writeIncidents are the incidents the write runs upsert, without links
// or reviews (each upsert stands alone).
func writeIncidents() ([]*incidentlib.Incident, error) {
	incs, err := gen.Generate(gen.Options{Count: 500, Seed: 25, FirstID: 1, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		return nil, err
	}
	for _, inc := range incs {
		inc.Related, inc.RecurrenceOf = nil, ""
		inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	}
	return incs, nil
}

// writeRates compares upserts through the cluster's members with upserts
// into one store, at 1, 8 and 32 writers: the rate, the latencies and the
// stores' commits (each one fsync) per write, all stores counted (one for
// the single store, three for the cluster).
func (b *clusterBench) writeRates(ctx context.Context, c *benchCluster, dir string, out io.Writer) error {
	incs, err := writeIncidents()
	if err != nil {
		return err
	}
	var singleCommits atomic.Int64
	single, err := storage.Open(filepath.Join(dir, "single.db"), storage.Options{Taxonomy: seeds.MustTaxonomy(),
		ObserveCommit: func(time.Duration) { singleCommits.Add(1) }})
	if err != nil {
		return err
	}
	defer single.Close()
	clusterCommits := func() int64 {
		var n int64
		for _, m := range c.members {
			n += m.commits.Load()
		}
		return n
	}
	// The collector's budget serve runs with (-gc-percent): the members'
	// applies allocate three times what one store's do.
	defer debug.SetGCPercent(debug.SetGCPercent(b.load.gcPercent))
	fmt.Fprintf(out, "writes: %d upserts per run, gc-percent %d; commits/write counts every store's commits (each an fsync): one store, or the three members'\n", b.writes, b.load.gcPercent)
	fmt.Fprintf(out, "%-8s %8s %12s %10s %10s %14s %10s\n", "setup", "writers", "writes/s", "p50", "p99", "commits/write", "CPU/write")
	for _, writers := range []int{1, 8, 32} {
		before, cpu := singleCommits.Load(), processCPU()
		rate, lat, err := writeRun(ctx, incs, b.writes, writers, func(ctx context.Context, _ int, inc *incidentlib.Incident) error {
			_, err := single.Incidents().UpsertIncident(editorCtx(ctx), inc, incidentlib.WriteOptions{})
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-8s %8d %12.0f %10s %10s %14.2f %10s\n", "single", writers, rate, percentile(lat, 0.5).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond),
			float64(singleCommits.Load()-before)/float64(b.writes), cpuPerWrite(cpu, b.writes))
		var prof profiles
		if writers == 32 {
			prof.cpu = b.cpuProfile
		}
		if err := prof.start(); err != nil {
			return err
		}
		before, cpu = clusterCommits(), processCPU()
		rate, lat, err = writeRun(ctx, incs, b.writes, writers, func(ctx context.Context, i int, inc *incidentlib.Incident) error {
			_, err := c.members[i%3].mb.Writer.UpsertIncident(editorCtx(ctx), inc, incidentlib.WriteOptions{})
			return err
		})
		if perr := prof.stop(); err == nil {
			err = perr
		}
		if err != nil {
			return err
		}
		// Every member applied every write once the last is answered on
		// its own member; the others' commits are counted once level.
		if err := c.level(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "%-8s %8d %12.0f %10s %10s %14.2f %10s\n", "cluster", writers, rate, percentile(lat, 0.5).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond),
			float64(clusterCommits()-before)/float64(b.writes), cpuPerWrite(cpu, b.writes))
	}
	return nil
}

// cpuPerWrite is the process's CPU time (user and system) since since
// (processCPU's), shared among n writes: for the cluster, every member's
// apply and every NATS server's work; "?" where it cannot be read.
func cpuPerWrite(since int64, n int) string {
	now := processCPU()
	if now == 0 || since == 0 {
		return "?"
	}
	return (time.Duration(now-since) / time.Duration(n)).Round(time.Microsecond).String()
}

// level waits until every member applied the stream up to its last
// sequence.
func (c *benchCluster) level(ctx context.Context) error {
	last, err := c.members[0].mb.Node.LastSeq(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.mb.Applier.WaitApplied(ctx, last))
	}
	return errors.Join(errs...)
}
