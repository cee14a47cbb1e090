package server

import (
	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/server/metrics"
)

// Store is every capability of the store that the whole handler uses:
// reads (and FastReads' snapshots of them), the change log, writes,
// backups, the store's figures, the API tokens and the administration of
// the taxonomy and the organizations. storage.DB implements it.
type Store interface {
	incidentlib.IncidentService
	incidentlib.OrganizationService
	incidentlib.TaxonomyService
	incidentlib.Snapshots
	incidentlib.ChangeLog
	incidentlib.IncidentWriter
	incidentlib.Backuper
	incidentlib.StoreMonitor
	incidentlib.TokenService
	incidentlib.TaxonomyAdmin
	incidentlib.IncidentAggregates
	incidentlib.HistoryService
	incidentlib.HistoryLog
	incidentlib.IncidentSets
}

// Assemble builds the GraphQL resolver over store and search (nil: search
// answers UNAVAILABLE), its executable schema, and the server with store
// as each of its services, as serve composes them; the benchmark harness
// and the tests compose the same way. incidents, when not nil, replaces
// the store for the resolver's incident reads: the store composed with an
// upstream library (upstream.LocalFirst), which a snapshot of the store
// cannot cover, so FastReads is off and cached responses expire
// (Config.Upstream is set).
func Assemble(store Store, incidents incidentlib.IncidentService, search incidentlib.SearchService, m *metrics.Metrics, cfg Config) (*Server, *graph.Resolver, error) {
	res := &graph.Resolver{Incidents: store, Organizations: store, Snapshots: store, Taxonomy: store.Taxonomy(), Taxonomies: store, TaxonomyAdmin: store, LoaderMetrics: m, Search: search, TokenService: store, Aggregates: store, History: store}
	if incidents != nil {
		res.Incidents, res.Snapshots = incidents, nil
		cfg.Upstream = true
	}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: graph.Complexity()})
	srv, err := New(Services{Changes: store, Incidents: store, Writer: store, Backups: store, Monitor: store, Tokens: store, Sets: store}, res, es, m, cfg)
	return srv, res, err
}
