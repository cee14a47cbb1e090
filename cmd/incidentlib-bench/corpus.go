package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/storage"
)

// corpusBench is a benchmark over a generated store: churn, export, search
// and stats. registerCorpusCommand holds what they share, so that none
// declares or checks it again: the corpus's flags (-incidents, at least
// 100; -seed; -db, each with the benchmark's own words) and the run in
// the corpus's directory.
type corpusBench interface {
	// declare defines the benchmark's own flags on fs.
	declare(fs *flag.FlagSet)
	// check refuses its own parsed flag values out of range.
	check() error
	// runIn measures over corpus c in directory dir and prints the
	// figures to stdout.
	runIn(ctx context.Context, c *corpus, dir string, stdout io.Writer) error
}

// The benchmarks over a generated store, in one place: each with its
// default for -incidents and its words for -incidents, -seed and -db. Each
// one's own flags, checks and measurements are in its file.
func init() {
	registerCorpusCommand("churn", "random upserts and deletes on a generated store: write latency, file size and freelist over time, then compaction",
		corpusUsage{20_000, "generated incidents loaded before the churn", "generator and churn seed", "directory for the store (default: a temporary directory, removed afterwards)"},
		func() corpusBench { return &churnBench{} })
	registerCorpusCommand("export", "the CSV export (GET /api/v1/incidents.csv), the Atom feed and the snapshot (GET /api/v1/snapshot.jsonl.gz) of a generated store over loopback: time, size and the peak heap while streaming",
		corpusUsage{100_000, "generated incidents in the store", "generator seed", "directory for the store (default: a temporary directory, removed afterwards)"},
		func() corpusBench { return &exportBench{} })
	registerCorpusCommand("search", "full-text search on a generated store: index build rate and size, query latency by class with and without filters",
		corpusUsage{100_000, "generated incidents in the store", "generator and query seed", "directory for the store and the index (default: a temporary directory, removed afterwards)"},
		func() corpusBench { return &searchBench{} })
	registerCorpusCommand("stats", "dashboard aggregates (Query.stats) over a generated store through the GraphQL API at one client: latency per filter",
		corpusUsage{100_000, "generated incidents in the store", "generator and filter seed", "directory for the store, kept and reused when it holds -incidents incidents (default: a temporary directory, removed afterwards)"},
		func() corpusBench { return &statsBench{} })
}

// corpusUsage is a corpus benchmark's default for -incidents and its words
// for -incidents (to which the declaration adds the minimum), -seed and
// -db (corpus.flags).
type corpusUsage struct {
	incidents                          int
	incidentsUsage, seedUsage, dbUsage string
}

// minCorpus is the fewest incidents a corpus benchmark takes.
const minCorpus = 100

// registerCorpusCommand registers the corpus benchmark newBench makes
// afresh for each run (registerCommand), behind the corpus's flags, check
// and directory.
func registerCorpusCommand(name, about string, usage corpusUsage, newBench func() corpusBench) {
	registerCommand(name, about, func() command { return &corpusCommand{name: name, usage: usage, bench: newBench()} })
}

// corpusCommand is the command of a corpus benchmark.
type corpusCommand struct {
	name   string
	usage  corpusUsage
	corpus corpus
	bench  corpusBench
}

func (c *corpusCommand) declare(fs *flag.FlagSet) {
	incidentsUsage := fmt.Sprintf("%s (at least %d)", c.usage.incidentsUsage, minCorpus)
	c.corpus.flags(fs, c.usage.incidents, incidentsUsage, c.usage.seedUsage, c.usage.dbUsage)
	c.bench.declare(fs)
}

func (c *corpusCommand) check() error {
	if c.corpus.incidents < minCorpus {
		return fmt.Errorf("-incidents at least %d", minCorpus)
	}
	return c.bench.check()
}

func (c *corpusCommand) run(ctx context.Context, stdout io.Writer) error {
	return c.corpus.in(c.name, func(dir string) error { return c.bench.runIn(ctx, &c.corpus, dir, stdout) })
}

// corpus holds the flags every benchmark over a generated store takes:
// how many incidents, the generator's seed and where the store goes.
type corpus struct {
	incidents int
	seed      int64
	dir       string
}

// flags declares -incidents (default incidents), -seed (default 1) and
// -db on fs, each with its benchmark's own words.
func (c *corpus) flags(fs *flag.FlagSet, incidents int, incidentsUsage, seedUsage, dbUsage string) {
	fs.IntVar(&c.incidents, "incidents", incidents, incidentsUsage)
	fs.Int64Var(&c.seed, "seed", 1, seedUsage)
	fs.StringVar(&c.dir, "db", "", dbUsage)
}

// in runs the benchmark in its directory: -db, made if need be, or a
// temporary one named for the benchmark, removed when run returns.
func (c *corpus) in(name string, run func(dir string) error) error {
	dir, done, err := workDir(c.dir, name)
	if err != nil {
		return err
	}
	defer done()
	return run(dir)
}

// store opens the store at path with opts (opts.Taxonomy is the
// generator's too) and fills it with the corpus, generated from -incidents
// and -seed and imported unlinked, unless it holds that many incidents
// already (a kept -db); fresh removes a file left at path first. The time
// the filling took is printed, not part of the figures.
func (c *corpus) store(ctx context.Context, path string, fresh bool, opts storage.Options, stdout io.Writer) (*storage.DB, []*incidentlib.Incident, error) {
	start := time.Now()
	incs, err := gen.Generate(gen.Options{Count: c.incidents, Seed: c.seed, Taxonomy: opts.Taxonomy})
	if err != nil {
		return nil, nil, err
	}
	if fresh {
		os.Remove(path)
	}
	db, err := storage.Open(path, opts)
	if err != nil {
		return nil, nil, err
	}
	if n, err := db.Incidents().CountIncidents(ctx, incidentlib.IncidentFilter{}); err != nil {
		db.Close()
		return nil, nil, err
	} else if n != len(incs) {
		if err := importUnlinked(ctx, db, incs); err != nil {
			db.Close()
			return nil, nil, err
		}
		fmt.Fprintf(stdout, "store: generated and imported in %s (not part of the figures)\n", time.Since(start).Round(time.Millisecond))
	}
	return db, incs, nil
}

// importUnlinked imports incs into db in transactions of 5,000, keeping
// their updatedAt. It drops their links first: links play no part in what
// the benchmarks that call it measure, and without them the store takes
// the corpus in chunks, much faster than in one transaction.
func importUnlinked(ctx context.Context, db *storage.DB, incs []*incidentlib.Incident) error {
	for _, inc := range incs {
		inc.Related, inc.RecurrenceOf = nil, ""
	}
	for i := 0; i < len(incs); i += 5_000 {
		if _, err := db.Incidents().ImportIncidents(ctx, incs[i:min(len(incs), i+5_000)], incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			return err
		}
	}
	return nil
}
