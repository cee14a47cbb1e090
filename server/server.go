// Package server composes the HTTP handler of the incident library: the
// GraphQL endpoint behind its edge (server/gqledge), the REST API and
// change feed (server/restapi), the admin endpoints (server/admin), the
// metrics (server/metrics), the playground, and the health checks. It
// also holds what concerns the HTTP server's connections and the process
// rather than requests: keep-alive turns (turns.go) and the garbage
// collector's budget and memory limit (gc.go).
//
// The server takes the library's capabilities as the root package's
// interfaces (Services) and the GraphQL resolver and schema already built;
// cmd/incidentlib wires the concrete store, search index and upstream.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/server/admin"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/server/gqledge/streams"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/server/restapi"
	"github.com/incidentlib/incidentlib/tracing"
)

// Config configures the handler.
type Config struct {
	// Prod turns off the playground and introspection.
	Prod bool
	// QueryCacheSize is how many parsed documents are kept. Default 1000.
	QueryCacheSize int
	// Logger receives internal errors; default slog.Default().
	Logger *slog.Logger
	// SearchQueue, when set, is the search index's queue and saves, read
	// for /metrics (the index serve opens; nil: the figures stay 0).
	SearchQueue metrics.SearchQueue
	// The HTTP edge (server/gqledge). ResponseCacheBytes bounds the
	// whole-response cache in bytes: 0 means
	// gqledge.DefaultResponseCacheBytes, negative turns it off.
	// APQCacheSize is how many persisted queries are kept: 0 means
	// gqledge.DefaultAPQCacheSize, negative turns APQ off. CacheControl is
	// sent with GraphQL GET responses (default gqledge.DefaultCacheControl).
	// TrustedDocuments, when set, are the only operations accepted (with
	// the MCP tools' own documents while /mcp is on: mcp.go).
	// LogRequests writes one line per request to Logger.
	ResponseCacheBytes int64
	APQCacheSize       int
	CacheControl       string
	TrustedDocuments   *gqledge.TrustedDocuments
	LogRequests        bool
	// Upstream says that the resolver reads linked incidents that are not
	// in the store from an upstream library, whose data the store's
	// sequence does not cover: FastReads is then off, and cached
	// responses live at most ResponseMaxAge (nothing is cached without a
	// max age). Without an upstream ResponseMaxAge is not used.
	Upstream       bool
	ResponseMaxAge time.Duration
	// Primary, when set, makes this server a read-only replica of the
	// library at that URL: every mutation answers READ_ONLY
	// (admin.ReadOnlyReplica).
	Primary string
	// Hostile and careless clients (server/gqledge: limits.go,
	// ratelimit.go, cors.go, prod.go): the limits of one request (zero
	// fields take defaults), the per-client rate of cost (off unless
	// CostPerSecond is set), the CORS allow-list, introspection in prod
	// mode, and further gqlgen extensions (tests count resolver calls with
	// one).
	Limits        gqledge.Limits
	RateLimit     gqledge.RateLimit
	CORSOrigins   []string
	Introspection bool
	Extensions    []graphql.HandlerExtension
	// Writes (server/admin): a request's bearer token is AdminToken (the
	// bootstrap admin, author "admin") or an API token of Services.Tokens,
	// and its role decides which mutations it may run (graph.MutationRoles)
	// and whether it may take GET /admin/backup (admin). Backups are copied to BackupDir (serve passes the
	// store's directory; default os.TempDir()) before they are sent, and
	// may take BackupTimeout to send (default admin.DefaultBackupTimeout).
	AdminToken    string
	BackupDir     string
	BackupTimeout time.Duration
	// GenericExecutor turns off graph.FastReads, which answers read
	// queries over the incident graph without gqlgen's per-field
	// execution; every operation then goes through gqlgen's executor.
	// FastReads is also off when an extension intercepts fields (it could
	// not honour them) and with an upstream library.
	GenericExecutor bool
	// PublicURL is the library's address as readers reach it, for the
	// links and ids of the Atom feed and the URLs of citations
	// (restapi.ValidatePublicURL, restapi.BaseURL); empty: the request's
	// scheme and host.
	PublicURL string
	// Subscriptions (live/, server/gqledge/streams, docs/subscriptions.md):
	// the hub's limits (subscriptions in total and per client, the buffer
	// per subscriber) and the streams' timings (keep-alive, per-write
	// deadline, WebSocket init and idle timeouts); zero fields take the
	// defaults. They need Services.Sets.
	SubscriptionLimits live.Options
	Subscriptions      gqledge.LiveOptions
	// NoMCP turns off the MCP endpoint /mcp (server/mcp.go; serve
	// --mcp=false).
	NoMCP bool
	// Stale, if set, says when this server's reads may be behind the
	// library (a cluster node without a quorum): every response then
	// carries the header StaleHeader: true, GraphQL responses are marked
	// with extensions.stale, and the response cache steps aside for
	// GraphQL (server/gqledge/stale.go). Nil: never stale. It is called on
	// every request and must be cheap.
	Stale func() bool
}

// StaleHeader is the response header of a response served while
// Config.Stale said so, with the value "true"; absent otherwise.
const StaleHeader = gqledge.StaleHeader

// Services are the library's capabilities the server serves beside the
// GraphQL resolver, as the root package's interfaces: the reads, and the
// one write side (Writer), which every mutation writes through.
// cmd/incidentlib passes the store for each read and, for Writer, the
// store alone or a cluster node's writer (server.Assemble).
type Services struct {
	// Changes is the store's change log: the change feed reads it, and
	// its sequence invalidates cached responses.
	Changes incidentlib.ChangeLog
	// Incidents answers the REST API's reads of incidents by id.
	Incidents incidentlib.IncidentService
	// Writer runs mutations sent with a token whose role allows them:
	// every write of the library, of any mutation.
	Writer incidentlib.Writer
	// Backups makes the copies GET /admin/backup sends.
	Backups incidentlib.Backuper
	// Monitor, if set, gives the store's figures, exported at scrape
	// time (metrics.Metrics.WatchStore).
	Monitor incidentlib.StoreMonitor
	// Tokens, if set, authenticates the API tokens requests carry; without
	// it only AdminToken authenticates. (The token writes are Writer's.)
	Tokens incidentlib.TokenReader
	// Sets, if set with Changes, gives subscriptions' filters the sets of
	// matching incidents; without it there are no subscriptions.
	Sets incidentlib.IncidentSets
	// History, if set, is the change log's history: the change feed
	// serves every version with its entry to a replica's or an admin's
	// token (restapi.Deps.History); without it, current records only.
	History incidentlib.HistoryLog
	// TaxonomyLog, if set, is the taxonomy's history, which replicas read
	// at GET /api/v1/taxonomy/changes (restapi.Deps.TaxonomyLog); without
	// it there is no such endpoint.
	TaxonomyLog incidentlib.TaxonomyLog
}

// Server is the HTTP side of the library.
type Server struct {
	Metrics *metrics.Metrics
	ready   atomic.Bool
	handler http.Handler
	api     *restapi.API
	edge    *gqledge.Edge
}

// New builds the handler. res is the GraphQL resolver and es its
// executable schema (graph.NewExecutableSchema over res), both built by
// the caller; m receives the metrics (res.LoaderMetrics is usually m
// too), the store's figures from svc.Monitor and res.Search's queue.
func New(svc Services, res *graph.Resolver, es graphql.ExecutableSchema, m *metrics.Metrics, cfg Config) (*Server, error) {
	if cfg.QueryCacheSize == 0 {
		cfg.QueryCacheSize = 1000
	}
	if cfg.QueryCacheSize < 0 {
		return nil, errors.New("query cache size must not be negative")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = gqledge.WithRequestIDs(cfg.Logger)
	if svc.Monitor != nil {
		if err := m.WatchStore(svc.Monitor); err != nil {
			return nil, err
		}
	}
	if cfg.SearchQueue != nil {
		m.ObserveSearch(cfg.SearchQueue)
	}
	s := &Server{Metrics: m}
	gql := handler.New(es)
	queryCache := lru.New[*ast.QueryDocument](cfg.QueryCacheSize)
	gql.SetQueryCache(queryCache)
	if !cfg.Prod || cfg.Introspection {
		gql.Use(extension.Introspection{})
	}
	gql.Use(m.OperationTracer())
	if tracing.Enabled() { // off, not even a layer in the chain (it would cost an allocation per operation)
		gql.Use(tracing.GraphQL{}) // a span per operation, FastReads' too (tracing/graphql.go)
	}
	gql.SetRecoverFunc(func(ctx context.Context, v any) error {
		cfg.Logger.ErrorContext(ctx, "panic in resolver", "panic", v)
		return errors.New("internal error")
	})
	// The edge's transports, error presenter, response cache and limits;
	// the limits' operation interceptor is the outermost of those below,
	// and sees every response, the guards' refusals included.
	// Who sends each request, once, at the edge: before the rate limit
	// (which counts by the verified token) and before anything runs.
	auth, err := admin.NewAuth(cfg.AdminToken, svc.Tokens)
	if err != nil {
		return nil, err
	}
	var liveOpts *gqledge.LiveOptions
	if svc.Changes != nil && svc.Sets != nil {
		hub, err := live.New(struct {
			incidentlib.ChangeLog
			incidentlib.IncidentSets
		}{svc.Changes, svc.Sets}, cfg.SubscriptionLimits)
		if err != nil {
			return nil, err
		}
		lo := cfg.Subscriptions
		lo.Hub, lo.EventContext, lo.ChangeOf = hub, res.EventContext, res.IncidentChangeOf
		liveOpts = &lo
	}
	edge, err := gqledge.New(gqledge.Options{
		Prod: cfg.Prod, Logger: cfg.Logger, ResponseCacheBytes: cfg.ResponseCacheBytes, APQCacheSize: cfg.APQCacheSize,
		CacheControl: cfg.CacheControl, TrustedDocuments: trustedDocuments(cfg), LogRequests: cfg.LogRequests,
		ResponseMaxAge: cfg.ResponseMaxAge, Upstream: cfg.Upstream, Limits: cfg.Limits, RateLimit: cfg.RateLimit,
		CORSOrigins: cfg.CORSOrigins, Extensions: cfg.Extensions, Authenticate: auth.Authenticate, Live: liveOpts, NewStreams: streams.New,
		Stale: cfg.Stale,
	}, svc.Changes, m, gql, queryCache)
	if err != nil {
		return nil, err
	}
	s.edge = edge
	if cfg.Primary != "" { // before the write guard: a replica names its primary
		gql.Use(admin.ReadOnlyReplica(cfg.Primary, edge.PresentError))
	}
	gql.Use(auth.WriteGuard(svc.Writer, edge.PresentError))
	// Last, so innermost: every guard, limit and metric above applies to
	// the operations it answers.
	if err := useFastReads(gql, es, res, m, cfg); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	graphqlHandler := edge.GraphQL(res.Middleware(gql))
	mux.Handle("/graphql", graphqlHandler)
	if err := mountMCP(mux, graphqlHandler, auth.Authenticate, cfg); err != nil {
		return nil, err
	}
	mux.HandleFunc("GET /schema.graphql", edge.ServeSchema)
	mux.HandleFunc("GET /favicon.ico", serveFavicon)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !s.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("starting\n"))
			return
		}
		if svc.Monitor != nil && svc.Monitor.StoreStats().Corrupt {
			// For good: the file needs restoring (STORE_CORRUPT, logged once).
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("store corrupt: restore it from a backup\n"))
			return
		}
		if cfg.Stale != nil && cfg.Stale() {
			// Ready (it serves its store), and says what the header
			// StaleHeader says: read from the same state (Config.Stale).
			_, _ = w.Write([]byte("ready, stale: reads may be behind the library\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("GET /admin/backup", admin.NewBackups(auth, svc.Backups, cfg.BackupDir, cfg.BackupTimeout, cfg.Logger))
	s.api = restapi.Mount(mux, restapi.Deps{Changes: svc.Changes, History: svc.History, TaxonomyLog: svc.TaxonomyLog,
		Incidents: svc.Incidents, Authenticate: auth.Authenticate, Logger: cfg.Logger})
	if err := restapi.MountExports(mux, restapi.ExportOptions{Incidents: svc.Incidents, Downloads: edge,
		PublicURL: cfg.PublicURL, Authenticate: auth.Authenticate, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if !cfg.Prod {
		mountGraphiQL(mux, "/graphql")
	}
	s.handler = tracing.HTTP(edge.Around(mux)) // incoming traceparent, server span (tracing/tracing.go)
	return s, nil
}

// useFastReads answers read queries with graph.FastReads unless the
// configuration rules it out.
func useFastReads(gql *handler.Server, es graphql.ExecutableSchema, res *graph.Resolver, m *metrics.Metrics, cfg Config) error {
	if cfg.GenericExecutor || cfg.Upstream {
		return nil
	}
	for _, e := range cfg.Extensions {
		if _, ok := e.(graphql.FieldInterceptor); ok {
			return nil
		}
	}
	fr, err := graph.NewFastReads(es, res)
	if err != nil {
		return err
	}
	fr.OnPanic = func(ctx context.Context, v any) {
		cfg.Logger.ErrorContext(ctx, "panic in the read executor; the query went to gqlgen's", "panic", v, "stack", string(debug.Stack()))
	}
	gql.Use(fr)
	m.ObserveFastReads(fr)
	return nil
}

// SetReady marks the server able to answer queries (for /readyz).
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// StopLongPolls ends every held change feed request at once and makes
// later ones answer without waiting. Call it when the HTTP server shuts
// down (http.Server.RegisterOnShutdown), so long polls do not hold it up.
func (s *Server) StopLongPolls() { s.api.StopLongPolls() }

// StopSubscriptions ends every subscription stream with a completion the
// clients understand and refuses new ones. Call it when the HTTP server
// shuts down (http.Server.RegisterOnShutdown), then WaitSubscriptions:
// WebSocket connections are not the HTTP server's to wait for.
func (s *Server) StopSubscriptions() { s.edge.StopSubscriptions() }

// WaitSubscriptions waits until every subscription stream has ended, or
// ctx.
func (s *Server) WaitSubscriptions(ctx context.Context) error { return s.edge.WaitSubscriptions(ctx) }

// ServeHTTP serves the library.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := tracing.NewStatusWriter(w)
	s.handler.ServeHTTP(sw, r)
	s.Metrics.HTTPRequest(r, sw.Status())
}
