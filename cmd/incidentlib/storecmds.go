package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// The offline commands that read or rewrite a store file: export, check,
// compact, and gen, which writes a corpus for them.

func reportProblems(w io.Writer, problems []string) error {
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	fmt.Fprintf(w, "import: %d problems; nothing was written\n", len(problems))
	return exitCode(1)
}

func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("export", getenv, stderr)
	sf := addStoreFlags(f)
	history := f.boolean("history", false, "write every incident's history (each version with its record, deleted incidents too) instead of the current records; read back with import (or its alias history import)")
	if err := f.parse(args); err != nil {
		return err
	}
	return sf.with(true, func(db *storage.DB) error {
		w := bufio.NewWriterSize(stdout, 1<<20)
		export := db.Maintenance().Export
		if *history {
			export = db.Versions().ExportHistory
		}
		if err := export(ctx, w); err != nil {
			return err
		}
		return w.Flush()
	})
}

func runCheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("check", getenv, stderr)
	sf := addStoreFlags(f)
	xf := addSearchFlags(f, sf)
	maxRecord := f.bytes("max-record", incidentlib.DefaultMaxRecordBytes, false, "the record size limit serve runs with (--max-record): records over it are listed as warnings")
	if err := f.parse(args); err != nil {
		return err
	}
	db, err := sf.openObserved(true, nil, nil, int(*maxRecord))
	if errors.Is(err, storage.ErrCorrupt) {
		return reportCorrupt(stdout, err)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	problems, warnings, err := db.Maintenance().CheckAll(ctx)
	if errors.Is(err, storage.ErrCorrupt) {
		return reportCorrupt(stdout, err)
	}
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	// Records stored before the rules they break (docs/writes.md): not
	// problems, but a write of them is refused until they are fixed.
	for _, w := range warnings {
		fmt.Fprintln(stdout, "warning: "+w)
	}
	if len(warnings) > 0 {
		fmt.Fprintf(stdout, "check: %d warnings\n", len(warnings))
	}
	if err := reportUpstreamLinks(ctx, db, sf, stdout); err != nil {
		return err
	}
	searchProblems, err := xf.check(ctx, db.Incidents(), stdout) // an index behind the store is no problem
	if err != nil {
		return err
	}
	if len(problems)+searchProblems > 0 {
		fmt.Fprintf(stdout, "check: %d problems\n", len(problems)+searchProblems)
		return exitCode(1)
	}
	fmt.Fprintln(stdout, "check: ok")
	return nil
}

// reportCorrupt prints check's verdict on a file with a damaged page: the
// file, the page and what to do, and no stack.
func reportCorrupt(stdout io.Writer, err error) error {
	fmt.Fprintf(stdout, "%s: %v\n", incidentlib.ESTORECORRUPT, err)
	fmt.Fprintln(stdout, "check: the store is corrupt")
	return exitCode(1)
}

func runCompact(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("compact", getenv, stderr)
	sf := addStoreFlags(f)
	if err := f.parse(args); err != nil {
		return err
	}
	before, err := os.Stat(*sf.path)
	if err != nil {
		return err
	}
	if err := sf.with(false, func(*storage.DB) error { return nil }); err != nil { // refuses a cluster node's file
		return err
	}
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	if err := storage.Compact(*sf.path, *sf.path, storage.Options{OpenTimeout: *sf.openTimeout, Taxonomy: tax}); err != nil {
		return err
	}
	after, err := os.Stat(*sf.path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compacted %s: %d bytes -> %d bytes\n", *sf.path, before.Size(), after.Size())
	return nil
}

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
