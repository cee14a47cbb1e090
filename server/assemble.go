package server

import (
	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/server/metrics"
)

// Reads is every read of the store that the whole handler uses: the
// incidents, organizations and taxonomy (and FastReads' snapshots of
// them), the change log, backups, the store's figures, the API tokens'
// reads, the taxonomy's history (its pages and the replicas' feed), the aggregates, the history, the
// incident sets and the glossary. storage.Reads implements it (DB.Reads: each read
// forwarded to the store's room that holds it). The writes are not here: they
// are the one incidentlib.Writer, the second value Assemble takes.
type Reads interface {
	incidentlib.IncidentService
	incidentlib.OrganizationService
	incidentlib.TaxonomyService
	incidentlib.Snapshots
	incidentlib.ChangeLog
	incidentlib.Backuper
	incidentlib.StoreMonitor
	incidentlib.TokenReader
	incidentlib.TaxonomyHistoryReader
	incidentlib.IncidentAggregates
	incidentlib.HistoryService
	incidentlib.HistoryLog
	incidentlib.TaxonomyLog
	incidentlib.IncidentSets
	incidentlib.GlossaryReader
}

// Assemble builds the GraphQL resolver over reads and search (nil: search
// answers UNAVAILABLE), its executable schema, and the server with reads
// as each of its read services and writes as its one write side, as
// serve composes them; the benchmark harness and the tests compose the
// same way. A store alone passes itself twice; a cluster node passes its
// store's reads and the cluster's writer (cmd/internal/clusternode).
// incidents, when not nil, replaces the store for the resolver's incident
// reads: the store composed with an upstream library
// (upstream.LocalFirst), which a snapshot of the store cannot cover, so
// FastReads is off and cached responses expire (Config.Upstream is set).
func Assemble(reads Reads, writes incidentlib.Writer, incidents incidentlib.IncidentService, search incidentlib.SearchService, m *metrics.Metrics, cfg Config) (*Server, *graph.Resolver, error) {
	res := &graph.Resolver{Incidents: reads, Organizations: reads, Snapshots: reads, Taxonomy: reads.Taxonomy(), Taxonomies: reads, TaxonomyChanges: reads, Glossary: reads, LoaderMetrics: m, Search: search, TokenService: reads, Aggregates: reads, History: reads,
		IncidentURL: incidentURL(cfg.PublicURL)}
	if incidents != nil {
		res.Incidents, res.Snapshots = incidents, nil
		cfg.Upstream = true
	}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: graph.Complexity()})
	srv, err := New(Services{Changes: reads, Incidents: reads, Writer: writes, Backups: reads, Monitor: reads, Tokens: reads, Sets: reads, History: reads, TaxonomyLog: reads}, res, es, m, cfg)
	return srv, res, err
}
