package testutil

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
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
		if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

// ServerParts are what a test server is made of beside its store and
// configuration; the zero value is serve's wiring without search.
type ServerParts struct {
	// Search serves Query.search; nil answers UNAVAILABLE.
	Search incidentlib.SearchService
	// Metrics, if set, are the server's metrics: a test that counts the
	// store's commits makes them before it opens the store
	// (storage.Options.ObserveCommit). Otherwise they are made on
	// Registry (nil: a private registry).
	Metrics  *metrics.Metrics
	Registry prometheus.Registerer
	// Incidents, if set, replaces the store for the resolver's incident
	// reads: the store composed with a test's upstream library
	// (server.Assemble).
	Incidents incidentlib.IncidentService
}

// ServerOn builds the library's whole HTTP handler over db, wired as
// serve wires it (cmd/incidentlib/server.go): the metrics watching db and
// its commits, the resolver over db, and db as every service. Backups go
// to db's directory unless cfg says otherwise.
func ServerOn(db *storage.DB, cfg server.Config, parts ServerParts) (*server.Server, error) {
	m := parts.Metrics
	if m == nil {
		var err error
		if m, err = metrics.New(parts.Registry); err != nil {
			return nil, err
		}
	}
	if cfg.BackupDir == "" {
		cfg.BackupDir = filepath.Dir(db.Path())
	}
	srv, _, err := server.Assemble(db.Reads(), db.Writer(), parts.Incidents, parts.Search, m, cfg)
	return srv, err
}

// ServerTest serves ServerOn(db, cfg, parts) with httptest, marked ready,
// until the test ends.
func ServerTest(tb testing.TB, db *storage.DB, cfg server.Config, parts ServerParts) (*httptest.Server, *server.Server) {
	tb.Helper()
	srv, err := ServerOn(db, cfg, parts)
	if err != nil {
		tb.Fatal(err)
	}
	srv.SetReady(true)
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	return hs, srv
}

// APIToken makes an API token with role in db and returns its secret.
func APIToken(tb testing.TB, db *storage.DB, name string, role incidentlib.Role) string {
	tb.Helper()
	secret, _, err := db.Tokens().CreateToken(context.Background(), name, role, time.Time{})
	if err != nil {
		tb.Fatal(err)
	}
	return secret
}

// Served is the whole handler over a real store, served by httptest
// (ServeStore).
type Served struct {
	*httptest.Server
	DB  *storage.DB
	Srv *server.Server
}

// ServeStore serves the whole handler over db with cfg and parts, ready,
// until the test ends.
func ServeStore(tb testing.TB, db *storage.DB, cfg server.Config, parts ServerParts) *Served {
	tb.Helper()
	hs, srv := ServerTest(tb, db, cfg, parts)
	return &Served{Server: hs, DB: db, Srv: srv}
}

// ServeIncidents serves incs (a store with a record cache of 20,000) with
// the default configuration.
func ServeIncidents(tb testing.TB, incs []*incidentlib.Incident) *Served {
	tb.Helper()
	return ServeStore(tb, ServerStore(tb, incs, storage.Options{RecordCache: 20000}), server.Config{}, ServerParts{})
}
