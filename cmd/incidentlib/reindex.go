package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/incidentlib/incidentlib/search"
)

// runReindex is `incidentlib reindex`: it rebuilds the search index.
func runReindex(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("reindex", getenv, stderr)
	sf := addStoreFlags(f)
	xf := addSearchFlags(f, sf)
	batch := f.count("batch", 2000, 1, "changes applied per index batch, in incidents")
	if err := f.parse(args); err != nil {
		return err
	}
	path := xf.indexPath()
	if path == "" {
		return errors.New("reindex: --search-index is off")
	}
	db, err := sf.open(true)
	if err != nil {
		return err
	}
	defer db.Close()
	if seq, logged, err := db.ClusterLog().LogSeq(ctx); err != nil {
		return err
	} else if logged {
		return fmt.Errorf("reindex: %s is a cluster node's store (log position %d): a node's index follows its store; start the node (serve rebuilds a missing or damaged index) and write through a running node with --server", db.Path(), seq)
	}
	began := time.Now()
	x, err := search.Rebuild(ctx, db.Incidents(), path, search.Options{BatchSize: *batch, StoreID: db.StoreID(), Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		return err
	}
	defer x.Close()
	n, err := x.DocCount()
	if err != nil {
		return err
	}
	took := time.Since(began)
	fmt.Fprintf(stdout, "reindexed %d incidents into %s in %s (%.0f incidents/s, %s on disk), at store sequence %d\n",
		n, path, took.Round(time.Millisecond), float64(n)/took.Seconds(), fmt.Sprintf("%.1f MiB", float64(x.DiskBytes())/(1<<20)), x.Seq())
	return nil
}
