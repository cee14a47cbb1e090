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
