package testutil

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// ServerStore opens a store in a temporary directory, with the seed
// taxonomy unless opts names one, fills it with incs and closes it when
// the test ends.
func ServerStore(tb testing.TB, incs []*incidentlib.Incident, opts storage.Options) *storage.DB {
	tb.Helper()
	if opts.Taxonomy == nil {
		opts.Taxonomy = seeds.MustTaxonomy()
	}
	db, err := storage.Open(filepath.Join(tb.TempDir(), "test.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if len(incs) > 0 {
		if _, err := db.ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

// ServerOn builds the library's whole HTTP handler over db, wired as
// serve wires it: the metrics on reg (a private registry when nil)
// watching db and its commits, the resolver over db with search (nil:
// search answers UNAVAILABLE), and db as every service. Backups go to
// db's directory unless cfg says otherwise.
func ServerOn(db *storage.DB, search incidentlib.SearchService, cfg server.Config, reg prometheus.Registerer) (*server.Server, error) {
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	store := serverStore{db}
	if err := m.WatchStore(store); err != nil {
		return nil, err
	}
	db.Observe = m.ObserveCommit // until storage.Options.ObserveCommit
	m.ObserveSearch(search)
	res := &graph.Resolver{Incidents: db, Organizations: db, Taxonomy: db.Taxonomy(), LoaderMetrics: m, Search: search}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: graph.Complexity()})
	if cfg.BackupDir == "" {
		cfg.BackupDir = filepath.Dir(db.Path())
	}
	return server.New(server.Services{Changes: store, Incidents: db, Writer: db, Backups: db}, res, es, m, cfg)
}

// ServerTest serves ServerOn(db, search, cfg, private registry) with
// httptest, marked ready, until the test ends.
func ServerTest(tb testing.TB, db *storage.DB, search incidentlib.SearchService, cfg server.Config) (*httptest.Server, *server.Server) {
	tb.Helper()
	srv, err := ServerOn(db, search, cfg, prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	srv.SetReady(true)
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	return hs, srv
}
