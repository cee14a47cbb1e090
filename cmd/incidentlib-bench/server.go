package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// newServer builds the library's HTTP handler over db as serve composes
// it (cmd/incidentlib/server.go): metrics on reg (private when nil), the
// resolver over db and search (nil: none), and db as every service.
func newServer(db *storage.DB, search incidentlib.SearchService, cfg server.Config, reg prometheus.Registerer) (*server.Server, error) {
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	store := storeShim{db}
	db.Observe = m.ObserveCommit // until storage.Options.ObserveCommit
	res := &graph.Resolver{Incidents: db, Organizations: db, Snapshots: db, Taxonomy: db.Taxonomy(), LoaderMetrics: m, Search: search}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: graph.Complexity()})
	return server.New(server.Services{Changes: store, Incidents: db, Writer: db, Backups: db, Monitor: store}, res, es, m, cfg)
}
