package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
)

// runGen is `incidentlib gen`: it writes a generated corpus.
func runGen(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("gen", getenv, stderr)
	count := f.count("count", 1000, 1, "number of incidents")
	seed := f.Int64("seed", 1, "random seed: the same seed gives the same corpus, byte for byte")
	first := f.count("first-id", 1, 1, "number of the first incident id")
	if err := f.parse(args); err != nil {
		return err
	}
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	// One record at a time: the corpus is never held whole.
	w := bufio.NewWriterSize(stdout, 1<<20)
	err = gen.Stream(gen.Options{Count: *count, Seed: *seed, FirstID: uint32(*first), Taxonomy: tax}, func(inc *incidentlib.Incident) error {
		b, err := json.Marshal(inc)
		if err != nil {
			return err
		}
		w.Write(b)
		return w.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return w.Flush()
}
