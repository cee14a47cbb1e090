// Package server builds the HTTP handler of the incident library: the
// GraphQL endpoint, the playground, health checks and metrics.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/storage"
)

// Config configures the handler.
type Config struct {
	// Prod turns off the playground and introspection.
	Prod bool
	// QueryCacheSize is how many parsed documents are kept. Default 1000.
	QueryCacheSize int
	// Logger receives internal errors; default slog.Default().
	Logger *slog.Logger
	// The HTTP edge (respcache.go, apq.go, trusted.go, httpcache.go,
	// logging.go). ResponseCacheBytes bounds the whole-response cache in
	// bytes: 0 means DefaultResponseCacheBytes, negative turns it off.
	// APQCacheSize is how many persisted queries are kept: 0 means
	// DefaultAPQCacheSize, negative turns APQ off. CacheControl is sent
	// with GraphQL GET responses (default DefaultCacheControl).
	// TrustedDocuments, when set, are the only operations accepted.
	// LogRequests writes one line per request to Logger.
	ResponseCacheBytes int64
	APQCacheSize       int
	CacheControl       string
	TrustedDocuments   *TrustedDocuments
	LogRequests        bool
	// ResponseMaxAge bounds how long a cached response may be served when
	// an upstream library is configured (Upstream), whose data
	// the store's sequence does not cover; with an upstream and no max age
	// nothing is cached. Without an upstream it is not used.
	ResponseMaxAge time.Duration
	// Primary, when set, makes this server a read-only replica of the
	// library at that URL: every mutation answers READ_ONLY (api.go).
	Primary string
	// Hostile and careless clients (limits.go, ratelimit.go, cors.go,
	// prod.go): the limits of one request (zero fields take defaults), the
	// per-client rate of cost (off unless CostPerSecond is set), the CORS
	// allow-list, introspection in prod mode, and further gqlgen
	// extensions (tests count resolver calls with one).
	Limits        Limits
	RateLimit     RateLimit
	CORSOrigins   []string
	Introspection bool
	Extensions    []graphql.HandlerExtension
	// Writes (auth.go, backup.go): mutations and GET /admin/backup need
	// Authorization: Bearer AdminToken; without a token the server is
	// read-only. Backups are copied to BackupDir (default: the store's
	// directory) before they are sent, and may take BackupTimeout to send
	// (default DefaultBackupTimeout).
	AdminToken    string
	BackupDir     string
	BackupTimeout time.Duration
	// Search serves Query.search; without it search answers UNAVAILABLE.
	Search incidentlib.SearchService
	// Incidents, if set, reads incidents instead of the store: the store
	// composed with an upstream library (upstream.LocalFirst), with
	// Upstream set.
	Incidents incidentlib.IncidentService
	// Upstream says that an upstream library is configured: FastReads is
	// off and cached responses expire (ResponseMaxAge).
	Upstream bool
	// GenericExecutor turns off graph.FastReads, which answers read
	// queries over the incident graph without gqlgen's per-field
	// execution; every operation then goes through gqlgen's executor.
	// FastReads is also off when an extension intercepts fields (it could
	// not honour them) and with an upstream library.
	GenericExecutor bool
}

// Server is the HTTP side of the library.
type Server struct {
	DB       *storage.DB
	Metrics  *Metrics
	Resolver *graph.Resolver
	cfg      Config
	ready    atomic.Bool
	handler  http.Handler
	api      *api   // REST endpoints (api.go)
	guard    *guard // limits, rate, CORS, schema (limits.go)

	admin   *adminAuth    // the admin token (auth.go)
	backups chan struct{} // one backup at a time (backup.go)
	// params are the GraphQL parameters of recent POST bodies, decoded
	// once for the guard and the POST transport (decodeParams).
	params memo[*decodedBody]
}

// New builds the handler over an open store. reg receives the metrics.
func New(db *storage.DB, cfg Config, reg prometheus.Registerer) (*Server, error) {
	if cfg.QueryCacheSize == 0 {
		cfg.QueryCacheSize = 1000
	}
	if cfg.QueryCacheSize < 0 {
		return nil, errors.New("query cache size must not be negative")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = withRequestIDs(cfg.Logger)
	m, err := NewMetrics(db, reg)
	if err != nil {
		return nil, err
	}
	s := &Server{DB: db, Metrics: m, cfg: cfg, backups: make(chan struct{}, 1)}
	m.observeSearch(cfg.Search)
	s.Resolver = &graph.Resolver{Incidents: db, Organizations: db, Snapshots: db, Taxonomy: db.Taxonomy(), LoaderMetrics: m, Search: cfg.Search}
	if cfg.Incidents != nil {
		s.Resolver.Incidents, s.Resolver.Snapshots = cfg.Incidents, nil
	}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: s.Resolver, Complexity: graph.Complexity()})
	gql := handler.New(es)
	gql.AddTransport(transport.Options{})
	// gqlgen's GET and POST, writing responses in one pass (respwriter.go).
	gql.AddTransport(getTransport{transport.GET{UseGrapQLResponseJsonByDefault: true}})
	gql.AddTransport(postTransport{POST: transport.POST{UseGrapQLResponseJsonByDefault: true}, params: &s.params})
	queryCache := lru.New[*ast.QueryDocument](cfg.QueryCacheSize)
	gql.SetQueryCache(queryCache)
	if !cfg.Prod || cfg.Introspection {
		gql.Use(extension.Introspection{})
	}
	gql.Use(m.operationTracer())
	gql.SetErrorPresenter(s.presentWithRequestID)
	gql.SetRecoverFunc(func(ctx context.Context, v any) error {
		cfg.Logger.ErrorContext(ctx, "panic in resolver", "panic", v)
		return errors.New("internal error")
	})

	edge, err := newOps(db, cfg, m, reg, gql, s.Resolver)
	if err != nil {
		return nil, err
	}
	// Limits first: its operation interceptor is then the outermost, and
	// sees every response, the guards' refusals below included (limits.go).
	if err := s.useGuard(gql, queryCache); err != nil {
		return nil, err
	}
	s.useReplicaGuard(gql) // before the write guard: a replica names its primary (api.go)
	if err := s.useWriteGuard(gql); err != nil {
		return nil, err
	}
	// Last, so innermost: every guard, limit and metric above applies to
	// the operations it answers.
	if err := s.useFastReads(gql, es); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("/graphql", s.guard.graphqlHTTP(edge.cachingHandler(withLang(s.Resolver.Middleware(gql)))))
	mux.HandleFunc("GET /schema.graphql", s.guard.serveSchema)
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
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /admin/backup", s.serveBackup)
	s.api = s.mountAPI(mux, gql)
	if !cfg.Prod {
		mountGraphiQL(mux, "/graphql")
	}
	s.handler = edge.requestLog(s.guard.origins.cors(mux))
	return s, nil
}

// useFastReads answers read queries with graph.FastReads unless the
// configuration rules it out.
func (s *Server) useFastReads(gql *handler.Server, es graphql.ExecutableSchema) error {
	if s.cfg.GenericExecutor || s.cfg.Upstream {
		return nil
	}
	for _, e := range s.cfg.Extensions {
		if _, ok := e.(graphql.FieldInterceptor); ok {
			return nil
		}
	}
	fr, err := graph.NewFastReads(es, s.Resolver)
	if err != nil {
		return err
	}
	fr.OnPanic = func(ctx context.Context, v any) {
		s.cfg.Logger.ErrorContext(ctx, "panic in the read executor; the query went to gqlgen's", "panic", v, "stack", string(debug.Stack()))
	}
	gql.Use(fr)
	s.Metrics.observeFastReads(fr)
	return nil
}

// SetReady marks the server able to answer queries (for /readyz).
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// ServeHTTP serves the library.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.handler.ServeHTTP(sw, r)
	s.Metrics.httpRequest(r, sw.status, time.Since(start))
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// presentError maps domain errors to GraphQL errors with extensions.code,
// in this one place. Internal errors are logged and shown as "internal
// error" only.
func (s *Server) presentError(ctx context.Context, err error) *gqlerror.Error {
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) && gqlErr.Err == nil {
		return gqlErr // parse and validation errors of gqlgen itself
	}
	out := graphql.DefaultErrorPresenter(ctx, err)
	var appErr *incidentlib.Error
	if errors.As(err, &appErr) {
		out.Message = appErr.Message
		if out.Extensions == nil {
			out.Extensions = map[string]any{}
		}
		out.Extensions["code"] = appErr.Code
		if len(appErr.Field) > 0 {
			out.Extensions["field"] = appErr.Field
		}
		return out
	}
	if errors.Is(err, context.DeadlineExceeded) {
		out.Message = "the request ran out of time"
		out.Extensions = map[string]any{"code": incidentlib.ETIMEOUT}
		return out
	}
	s.cfg.Logger.ErrorContext(ctx, "internal error", "err", err, "path", out.Path.String())
	out.Message = "internal error"
	out.Extensions = map[string]any{"code": incidentlib.EINTERNAL}
	return out
}

// withLang sets the request's default language from Accept-Language.
func withLang(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Accept-Language"); h != "" {
			r = r.WithContext(graph.WithLang(r.Context(), ParseAcceptLanguage(h)))
		}
		next.ServeHTTP(w, r)
	})
}

// ParseAcceptLanguage picks English or Korean from an Accept-Language
// header by quality; English when neither is named.
func ParseAcceptLanguage(h string) incidentlib.Lang {
	best, bestQ := incidentlib.LangEn, -1.0
	for _, part := range strings.Split(h, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := parseQ(v); err == nil {
				q = f
			}
		}
		primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		var l incidentlib.Lang
		switch primary {
		case "en":
			l = incidentlib.LangEn
		case "ko":
			l = incidentlib.LangKo
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = l, q
		}
	}
	return best
}

func parseQ(s string) (float64, error) {
	var f float64
	var err error
	switch {
	case s == "1" || strings.HasPrefix(s, "1."):
		f = 1
	case strings.HasPrefix(s, "0"):
		f, err = parseDecimal(s)
	default:
		err = errors.New("bad q")
	}
	return f, err
}

func parseDecimal(s string) (float64, error) {
	f, scale := 0.0, 1.0
	_, frac, _ := strings.Cut(s, ".")
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, errors.New("bad q")
		}
		scale /= 10
		f += float64(c-'0') * scale
	}
	return f, nil
}
