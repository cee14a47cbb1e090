package main

import (
	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// newServer composes serve's HTTP side over the store: the GraphQL
// resolver over the store (or, with --upstream, over incidents: the store
// composed with the upstream library, which FastReads' snapshots cannot
// cover) and the search index (nil: search answers UNAVAILABLE), its
// executable schema, and the server with the store as each of its
// services; the store's figures and the search queue go to m.
func newServer(db *storage.DB, incidents incidentlib.IncidentService, search incidentlib.SearchService, m *metrics.Metrics, cfg server.Config) (*server.Server, error) {
	store := storeShim{db}
	res := &graph.Resolver{Incidents: db, Organizations: db, Snapshots: db, Taxonomy: db.Taxonomy(), LoaderMetrics: m, Search: search}
	if incidents != nil {
		res.Incidents, res.Snapshots = incidents, nil
	}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: graph.Complexity()})
	return server.New(server.Services{Changes: store, Incidents: db, Writer: db, Backups: db, Monitor: store}, res, es, m, cfg)
}
