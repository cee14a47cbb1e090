package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/storage"
)

// runImport is `incidentlib import`: collections or history lines into a
// store file (importstream.go, importlocal.go, historyimport.go) or to a
// running server (importremote.go).
func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	f := newFlags("import", getenv, stderr)
	sf := addStoreFlags(f)
	rf := addRemoteFlags(f, "send the records to the running server at this URL (importIncidents) instead of opening --db; IL-JSON only")
	chunk := f.count("chunk", 1000, 0, "with --server: records per request, each request all or nothing; 0 sends all in one (held in memory)")
	batch := f.count("batch", 2000, 1, "records written per transaction, in records (and at most 16MiB of them); memory grows with it")
	maxRecord := addMaxRecordFlag(f)
	format := f.str("format", "", "the format of every file: "+formatList()+"; empty detects each file's format")
	skipBad := f.boolean("skip-bad", false, "write the good records and list the bad ones, instead of writing nothing")
	f.checks = append(f.checks, func() error {
		if *format != "" && !importer.Format(*format).IsValid() {
			return fmt.Errorf("--format must be one of %s, got %q", formatList(), *format)
		}
		return nil
	})
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() == 0 {
		return errors.New("import: name at least one file or directory (or - for standard input)")
	}
	// The live heap of an import is one batch and the ids: a larger
	// collector budget costs little memory and saves a third of the time;
	// a soft limit of 512MiB (unless GOMEMLIMIT) keeps its peaks down.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	if getenv("GOMEMLIMIT") == "" && os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(512 << 20))
	}
	dir := spoolDir(*sf.path)
	if rf.remote() {
		dir = os.TempDir()
	}
	inputs, cleanup, err := importInputs(f.Args(), stdin, dir)
	defer cleanup()
	if err != nil {
		return err
	}
	if hist, err := historyInputs(inputs); err != nil {
		return err
	} else if hist != nil { // export --history's lines (historyimport.go)
		if *skipBad {
			return errors.New("import: a history import writes all or nothing; --skip-bad is for records")
		}
		if rf.remote() {
			return importHistoryRemote(ctx, rf, hist, stdout, stderr)
		}
		return sf.with(false, func(db *storage.DB) error { return importHistoryLocal(ctx, db, hist, stdout) })
	}
	if rf.remote() {
		return importRemote(ctx, rf, inputs, *chunk, int(*maxRecord), stdout, stderr)
	}
	files, skipped, ok, err := streamFiles(inputs, *format)
	if err != nil {
		return err
	}
	return sf.with(false, func(db *storage.DB) error {
		if ok {
			err := importStream(ctx, db, files, skipped, importOptions{skipBad: *skipBad, maxRecord: int(*maxRecord), batch: *batch,
				stopAfter: stopAfterHook(getenv)}, stdout, stderr)
			if err != errNeedsPlan {
				return err
			}
		}
		res, err := readCollections(inputs, *format, int(*maxRecord))
		if err != nil {
			return err
		}
		return importLocal(ctx, db, res, *skipBad, stdout, stderr)
	})
}

func formatList() string {
	names := make([]string, len(importer.Formats))
	for i, f := range importer.Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// The import's report, the same whichever path wrote the records (in
// memory, streamed, to a server): the problems that stopped it, on
// stderr, or the counts and what was skipped, on stdout.

// reportProblems lists the problems that stopped an import, which wrote
// nothing, and returns exit status 1.
func reportProblems(w io.Writer, problems []string) error {
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	fmt.Fprintf(w, "import: %d problems; nothing was written\n", len(problems))
	return exitCode(1)
}

// reportInvalid reports the records a write refused (incidentlib.ErrorList)
// as the import's problems; any other error is returned as it is.
func reportInvalid(w io.Writer, err error) error {
	list := incidentlib.ErrorList(err)
	if len(list) == 0 {
		return err
	}
	lines := make([]string, len(list))
	for i, e := range list {
		lines[i] = e.Message
	}
	return reportProblems(w, lines)
}

// reportSkipped lists the bad records an import skipped (--skip-bad) and
// the files that hold no records.
func reportSkipped(w io.Writer, problems []string, skipped []importer.Skip) {
	if len(problems) > 0 {
		fmt.Fprintf(w, "skipped %d bad records (--skip-bad):\n", len(problems))
		for _, p := range problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "skipped %d files that hold no records:\n", len(skipped))
		for _, s := range skipped {
			fmt.Fprintf(w, "  %s: %s\n", s.Path, s.Reason)
		}
	}
}

// addResult adds a batch's or a request's counts to sum.
func addResult(sum, r *incidentlib.ImportResult) {
	sum.Created += r.Created
	sum.Updated += r.Updated
	sum.Unchanged += r.Unchanged
}
