package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// The mutations benchmark: upsertIncident over loopback through the real
// handler (server.Assemble, as serve composes it) into one store with
// fsync on, at 1, 8 and 32 concurrent clients, each on keep-alive
// connections: what an editor's tool or an importer sending records one
// by one sees, the store's group commit included.

func init() {
	registerCommand("mutations", "upsertIncident over loopback through the real handler into one store (fsync on): writes a second, p50 and p99 at 1, 8 and 32 concurrent clients", func() command { return &mutationsBench{} })
}

type mutationsBench struct {
	writes int
}

const mutationsToken = "mutations-bench-admin-token-0123456789"

func (b *mutationsBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.writes, "writes", 2000, "upserts per run (each concurrency)")
}

func (b *mutationsBench) check() error { return atLeast("writes", b.writes, 100) }

func (b *mutationsBench) run(ctx context.Context, out io.Writer) error {
	incs, err := writeIncidents()
	if err != nil {
		return err
	}
	dir, done, err := workDir("", "mutations")
	if err != nil {
		return err
	}
	defer done()
	db, err := storage.Open(filepath.Join(dir, "mutations.db"), storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		return err
	}
	defer db.Close()
	url, stop, err := serveUncachedWith(db, nil, server.Config{AdminToken: mutationsToken})
	if err != nil {
		return err
	}
	defer stop()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}
	fmt.Fprintf(out, "mutations: %d upserts per run, one store (fsync on), load average %s\n", b.writes, loadAvg())
	fmt.Fprintf(out, "%8s %12s %10s %10s %10s\n", "clients", "writes/s", "p50", "p99", "CPU/write")
	for _, clients := range []int{1, 8, 32} {
		cpu := processCPU()
		rate, lat, err := writeRun(ctx, incs, b.writes, clients, func(ctx context.Context, _ int, inc *incidentlib.Incident) error {
			return postUpsert(ctx, hc, url, mutationsToken, inc.ID, inc.Title.En)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%8d %12.0f %10s %10s %10s\n", clients, rate, percentile(lat, 0.5).Round(time.Microsecond),
			percentile(lat, 0.99).Round(time.Microsecond), cpuPerWrite(cpu, b.writes))
	}
	return nil
}
