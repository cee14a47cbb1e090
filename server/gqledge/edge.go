// Package gqledge is the GraphQL edge of the HTTP server: everything
// between a client's GraphQL request and gqlgen's executor. It holds the
// GraphQL-over-HTTP transports and their one-pass response writer
// (respwriter.go), the guard against hostile and careless clients
// (guard.go: HTTP checks and batches; limits.go: the limits and refusal
// codes; limitsext.go: the gqlgen extension that checks documents, cost
// and deadlines; measure.go: a document's shape; refuse.go: refusals
// before GraphQL runs; ratelimit.go; cors.go), the whole-response cache
// (respcache/, with request.go and caching.go here) with HTTP caching
// (respcache/httpcache.go; the --cache-control value in httpcache.go),
// automatic persisted queries (apq.go), trusted documents (trusted.go),
// the error presenter (errors.go), prod mode and the published schema
// (prod.go), the stale mark of a server whose reads may be behind
// (stale.go), and the request log with its request ids (requestlog.go),
// which the edge's layers fill in for each request. The subscription
// transports (streams/) plug in through streaming.go, with their options
// in liveoptions.go.
package gqledge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/server/gqledge/respcache"
	"github.com/incidentlib/incidentlib/server/metrics"
)

// Options configure the edge; server.Config documents each field.
type Options struct {
	Prod               bool
	Logger             *slog.Logger // default slog.Default()
	ResponseCacheBytes int64
	APQCacheSize       int
	CacheControl       string
	TrustedDocuments   *TrustedDocuments
	LogRequests        bool
	ResponseMaxAge     time.Duration
	Upstream           bool
	Limits             Limits
	RateLimit          RateLimit
	CORSOrigins        []string
	Extensions         []graphql.HandlerExtension
	// Authenticate identifies the sender of a request by its bearer token
	// (admin.Auth.Authenticate): the request with its identity, or the
	// refusal (UNAUTHENTICATED, 401), before the rate limit and anything
	// else that reads. Nil: every request is an anonymous reader.
	Authenticate func(*http.Request) (*http.Request, error)
	// Live, if set, serves subscriptions over SSE and WebSocket on
	// /graphql, by the transports NewStreams makes (streams.New).
	Live       *LiveOptions
	NewStreams StreamsMaker
	// Stale, if set, says when the server's reads may be behind (a
	// cluster node without a quorum): every response through Around then
	// carries StaleHeader, every GraphQL response extensions.stale, and
	// the response cache steps aside for GraphQL (stale.go). Called on
	// every request: it must be cheap.
	Stale func() bool
}

// Edge holds the GraphQL edge's features: the guard, the response cache,
// HTTP caching, persisted queries and trusted documents, the error
// presenter and request logging.
type Edge struct {
	changes     incidentlib.ChangeLog // its Seq invalidates cached responses
	m           *metrics.Metrics
	cache       *respcache.Cache
	httpCaching respcache.HTTPCaching // ETags and Cache-Control of GET responses and downloads
	trusted     *TrustedDocuments
	logger      *slog.Logger
	prod        bool
	logRequests bool
	reqMetrics  *requestMetrics
	upstream    bool          // an upstream library is configured
	maxAge      time.Duration // how long entries live when it is
	guard       *guard

	getMemo, postMemo memo[gqlRequest] // what GET query strings and POST bodies say
	// params are the GraphQL parameters of recent POST bodies, decoded
	// once for the guard and the POST transport (decodeParams).
	params memo[*decodedBody]

	live Streams // nil without subscriptions

	staleFunc func() bool // Options.Stale; nil: never stale
}

// New checks the edge's options, registers its metrics on m's registry
// and sets gql up: the GET, POST and OPTIONS transports, the error
// presenter, and the edge's extensions (the cache signal, APQ or the
// trusted documents, the limits, prod mode, then opts.Extensions).
// queryCache is gql's cache of parsed documents, which the guard reads.
// changes is the store's change log, whose sequence invalidates cached
// responses.
func New(opts Options, changes incidentlib.ChangeLog, m *metrics.Metrics, gql *handler.Server, queryCache graphql.Cache[*ast.QueryDocument]) (*Edge, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	reg := m.Registerer()
	e := &Edge{changes: changes, m: m, logger: opts.Logger,
		prod: opts.Prod, logRequests: opts.LogRequests, upstream: opts.Upstream, maxAge: opts.ResponseMaxAge, staleFunc: opts.Stale}
	if e.maxAge < 0 {
		return nil, fmt.Errorf("the response cache's maximum age must not be negative, got %s", e.maxAge)
	}
	cacheControl := opts.CacheControl
	if cacheControl == "" {
		cacheControl = DefaultCacheControl
	}
	if err := ValidateCacheControl(cacheControl); err != nil {
		return nil, err
	}
	e.httpCaching = respcache.NewHTTPCaching(cacheControl)
	gql.AddTransport(transport.Options{})
	if opts.Live != nil {
		// Before GET and POST, which would take an SSE request as theirs.
		lo := *opts.Live
		if err := lo.withDefaults(); err != nil {
			return nil, err
		}
		if opts.NewStreams == nil {
			return nil, errors.New("subscriptions need the transports' maker (streams.New)")
		}
		var err error
		if e.live, err = opts.NewStreams(e, lo); err != nil {
			return nil, err
		}
		for _, t := range e.live.Transports() {
			gql.AddTransport(t)
		}
		// A mutation that may revoke a token judges the open streams'
		// tokens again before its response (streams/auth.go).
		gql.Use(e.live.Extension())
	}
	// gqlgen's GET and POST, writing responses in one pass (respwriter.go);
	// application/json unless the client asks for
	// application/graphql-response+json (the guard negotiates, negotiate).
	gql.AddTransport(getTransport{transport.GET{}})
	gql.AddTransport(postTransport{POST: transport.POST{}, params: &e.params})
	gql.SetErrorPresenter(e.PresentError)
	size := opts.ResponseCacheBytes
	switch {
	case size == 0:
		size = DefaultResponseCacheBytes
	case size < 0:
		size = 0 // off
	}
	var err error
	if e.cache, err = respcache.New(size, reg); err != nil {
		return nil, err
	}
	if e.reqMetrics, err = newRequestMetrics(reg); err != nil {
		return nil, err
	}
	gql.Use(cacheSignal{})
	if opts.Stale != nil {
		gql.Use(staleMark{opts.Stale})
	}
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "incidentlib_trusted_documents_rejected_total",
		Help: "Operations refused because trusted documents are on, by code (PERSISTED_QUERY_NOT_FOUND, FORBIDDEN).",
	}, []string{"code"})
	if err := reg.Register(rejected); err != nil {
		return nil, err
	}
	rejected.WithLabelValues(CodePersistedQueryNotFound) // present from start-up, 0 without trusted documents
	rejected.WithLabelValues(CodeForbidden)
	if opts.TrustedDocuments != nil {
		if err := opts.TrustedDocuments.check(graph.NewExecutableSchema(graph.Config{}).Schema()); err != nil {
			return nil, err
		}
		e.trusted = opts.TrustedDocuments
		gql.Use(trustedExtension{docs: e.trusted, rejected: rejected})
	} else if opts.APQCacheSize >= 0 {
		n := opts.APQCacheSize
		if n == 0 {
			n = DefaultAPQCacheSize
		}
		apq, err := newAPQ(n, reg)
		if err != nil {
			return nil, err
		}
		gql.Use(apq)
	}
	// Limits after the cache signal: its operation interceptor is then
	// the outermost, and sees every response, the guards' refusals
	// installed after it included (limitsext.go).
	if e.guard, err = newGuard(e, opts, gql, queryCache); err != nil {
		return nil, err
	}
	return e, nil
}

// GraphQL wraps the GraphQL handler next (gqlgen's, under the resolver's
// loaders) with the edge: the guard's HTTP checks and batches, the
// response cache and HTTP caching, and the request's language.
func (e *Edge) GraphQL(next http.Handler) http.Handler {
	h := e.guard.graphqlHTTP(e.cachingHandler(withLang(next)))
	if e.live == nil {
		return h
	}
	// Streams skip the guard's HTTP checks and the response cache; their
	// transports authenticate, limit and refuse themselves (streams/).
	streams := withLang(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.live.Serves(r) {
			streams.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// StopSubscriptions ends every subscription stream with a completion and
// refuses new ones (at shutdown).
func (e *Edge) StopSubscriptions() {
	if e.live != nil {
		e.live.Stop()
	}
}

// WaitSubscriptions waits until every stream has ended, or ctx.
func (e *Edge) WaitSubscriptions(ctx context.Context) error {
	if e.live == nil {
		return nil
	}
	return e.live.Wait(ctx)
}

// ServeSchema publishes the schema as SDL (GET /schema.graphql), in prod
// mode too, so that client tooling works without introspection.
func (e *Edge) ServeSchema(w http.ResponseWriter, r *http.Request) { e.guard.serveSchema(w, r) }

// Around wraps the whole server's handler: request ids, the request log
// and the GraphQL HTTP request histogram, then CORS.
func (e *Edge) Around(h http.Handler) http.Handler {
	return e.requestLog(e.guard.origins.cors(h))
}
