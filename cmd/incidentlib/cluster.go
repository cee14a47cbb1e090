package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/incidentlib/incidentlib/storage"
)

// runCluster is `incidentlib cluster init --db EXISTING`: it makes an
// existing single-node library a cluster node's store (log position 0).
// Served with the cluster flags, the node publishes the library as the
// cluster's first snapshot; the other nodes, started without a store
// file, start from it (docs/cluster.md).
func runCluster(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprintln(stderr, "usage: incidentlib cluster init --db EXISTING")
		return exitCode(2)
	}
	f := newFlags("cluster init", getenv, stderr)
	sf := addStoreFlags(f)
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("cluster init: unexpected argument %q", f.Arg(0))
	}
	// An existing library: a missing file would be made, empty, and the
	// cluster started from nothing.
	if _, err := os.Stat(*sf.path); err != nil {
		return fmt.Errorf("cluster init: --db names no existing library: %w", err)
	}
	db, err := sf.open(false)
	if err != nil {
		if errors.Is(err, storage.ErrLocked) {
			return fmt.Errorf("%w: stop the server that holds it first", err)
		}
		return err
	}
	defer db.Close()
	if err := db.ClusterLog().RefuseIfLogged(ctx, "cluster init"); err != nil {
		return err
	}
	if _, err := db.ClusterLog().InitClusterLibrary(ctx); err != nil { // log position 0, and the library's id its snapshots carry
		return err
	}
	fmt.Fprintf(stdout, "%s is a cluster node's store now: serve it with the cluster flags; it publishes the library as the cluster's first snapshot, and the other nodes start from it\n", db.Path())
	return nil
}
