package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// runCompact is `incidentlib compact`: it rewrites a store file offline.
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
