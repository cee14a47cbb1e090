package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// runCheck is `incidentlib check`: it reads a store file offline and
// lists what is wrong with it (export, compact and gen, the other offline
// commands on a store file, are in their own files).
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
	searchProblems, err := xf.check(ctx, db, stdout) // an index behind the store is no problem
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
