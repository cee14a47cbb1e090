package main

import (
	"context"
	"flag"

	"github.com/incidentlib/incidentlib"
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
