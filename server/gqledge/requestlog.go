package gqledge

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib/server/gqledge/respcache"
	"github.com/incidentlib/incidentlib/tracing"
)

// Request logging: one JSON line (log/slog) per request with the request
// id (request_id), method, path, status, duration, bytes written, and for GraphQL the
// operation name, the cost when known, the cache outcome and a short hash
// of the document, and trace_id when tracing is on and the request has a
// trace (tracing.TraceID, docs/tracing.md). Sizes are bounded: documents and variables are never
// logged whole; at debug level their first logPrefixBytes bytes are.
// Health checks and scrapes are logged at debug level, server errors (5xx)
// at error level, everything else at info.
//
// The request id is the client's X-Request-Id when it is sane (1 to 64
// characters of letters, digits and -_.:), else a new random one; it is
// echoed in the X-Request-Id response header and reachable from the
// request context with RequestID, for other log lines of the same request.

// logPrefixBytes bounds what is logged of a document or its variables.
const logPrefixBytes = 120

// reqState is what the layers of one request tell the request log.
type reqState struct {
	id      string
	op      string // operation name
	docHash string // hex SHA-256 of the document, or the persisted hash sent
	cache   string // response cache outcome
	cost    any
	debug   bool // debug logging is on: keep document prefixes

	// On a hit, from the entry: the cost as logged, and the request
	// duration histogram of hits on it, both resolved when it was stored.
	costText    string
	hitDuration prometheus.Observer

	queryPrefix, varsPrefix string

	slot *cacheSlot // while the GraphQL handler runs a cacheable request

	stale bool // the server's reads may be behind (Options.Stale), as read when the request came
}

// noteHit records that the response was e, from the cache.
func (st *reqState) noteHit(e *respcache.Entry) {
	st.op, st.cost, st.costText, st.hitDuration = e.Op, e.Cost, e.CostText, e.HitDuration
}

type stateKey struct{}

func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if st := stateOf(ctx); st != nil {
		return st.id
	}
	return ""
}

// requestID honours a sane X-Request-Id, else makes one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); saneRequestID(id) {
		return id
	}
	var b [16]byte
	const hexdigits = "0123456789abcdef"
	n := rand.Uint64()
	for i := range b {
		b[i] = hexdigits[n&15]
		n >>= 4
	}
	return string(b[:])
}

func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

type requestMetrics struct {
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "incidentlib_graphql_http_request_duration_seconds",
			Help:    "Time to answer a GraphQL HTTP request, response cache hits included, by operation name and cache outcome (hit, miss, stale, bypass, off).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation", "cache"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "incidentlib_http_in_flight_requests",
			Help: "HTTP requests being served now.",
		}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// requestLog wraps the whole handler: request id, request state, the
// GraphQL request histogram and the request log line.
//
// The line is cheap to make, as it is made for every request: nothing of
// it is built unless its level is enabled; it goes straight to the
// logger's handler (slog.Logger.LogAttrs would also look up the caller's
// program counter, which the line does not log); the attributes every
// GraphQL request of one method shares are formatted once (WithAttrs); all
// others are strings and numbers, bounded, formatted by the JSON handler
// without reflection. On a cache hit the cost text and the histogram come
// resolved with the entry.
func (o *Edge) requestLog(next http.Handler) http.Handler {
	lines := newRequestLines(o.logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		lr := &loggedRequest{} // the state and the writer in one allocation
		st, lw := &lr.st, &lr.lw
		st.id = requestID(r)
		ctx := context.WithValue(r.Context(), stateKey{}, st)
		st.debug = o.logRequests && lines.base.Enabled(ctx, slog.LevelDebug)
		w.Header()["X-Request-Id"] = []string{st.id}
		if o.staleFunc != nil && o.staleFunc() { // stale.go
			st.stale = true
			w.Header()[StaleHeader] = staleValue
		}
		lw.ResponseWriter = w
		o.reqMetrics.inFlight.Inc()
		defer o.reqMetrics.inFlight.Dec()
		next.ServeHTTP(lw, r.WithContext(ctx))
		end := time.Now()
		d := end.Sub(start)
		gql := r.URL.Path == "/graphql"
		if gql {
			if st.cache == respcache.Hit && st.hitDuration != nil {
				st.hitDuration.Observe(d.Seconds())
			} else {
				cache := st.cache
				if cache == "" {
					cache = respcache.Bypass
				}
				o.reqMetrics.duration.WithLabelValues(o.m.OperationLabel(st.op), cache).Observe(d.Seconds())
			}
		}
		if !o.logRequests {
			return
		}
		level := slog.LevelInfo
		switch {
		case lw.Status() >= 500:
			level = slog.LevelError
		case !gql && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics"):
			level = slog.LevelDebug
		}
		h, fixed := lines.handler(r, gql)
		if !h.Enabled(ctx, level) {
			return
		}
		rec := slog.NewRecord(end, level, "request", 0)
		rec.AddAttrs(slog.String("request_id", st.id))
		if tid := tracing.TraceID(ctx); tid != "" {
			rec.AddAttrs(slog.String("trace_id", tid))
		}
		if !fixed {
			rec.AddAttrs(
				slog.String("method", truncate(r.Method, 16)),
				slog.String("path", truncate(r.URL.Path, logPrefixBytes)),
			)
		}
		rec.AddAttrs(
			slog.Int("status", lw.Status()),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
			slog.Int("bytes", lw.Bytes()),
			slog.String("remote", r.RemoteAddr),
		)
		if gql {
			rec.AddAttrs(slog.String("op", truncate(st.op, logPrefixBytes)), slog.String("cache", st.cache))
			if st.docHash != "" {
				rec.AddAttrs(slog.String("doc", truncate(st.docHash, 16)))
			}
			switch {
			case st.costText != "":
				rec.AddAttrs(slog.String("cost", st.costText))
			case st.cost != nil:
				rec.AddAttrs(slog.String("cost", truncate(costString(st.cost), 32)))
			}
			if st.queryPrefix != "" {
				rec.AddAttrs(slog.String("query", st.queryPrefix))
			}
			if st.varsPrefix != "" {
				rec.AddAttrs(slog.String("variables", st.varsPrefix))
			}
		}
		_ = h.Handle(ctx, rec)
	})
}

// loggedRequest is the request log's state and response writer of one
// request.
type loggedRequest struct {
	st reqState
	lw tracing.StatusWriter
}

// requestLines are the handlers request lines go to: the logger's own,
// under the wrapper that adds request_id from the context (the line has it
// already), and for GraphQL GET and POST that handler with the method and
// path formatted once.
type requestLines struct {
	base            slog.Handler
	gqlGet, gqlPost slog.Handler
}

func newRequestLines(l *slog.Logger) requestLines {
	h := l.Handler()
	if rh, ok := h.(requestIDHandler); ok {
		h = rh.Handler
	}
	fixed := func(method string) slog.Handler {
		return h.WithAttrs([]slog.Attr{slog.String("method", method), slog.String("path", "/graphql")})
	}
	return requestLines{base: h, gqlGet: fixed(http.MethodGet), gqlPost: fixed(http.MethodPost)}
}

// handler is the handler for r's line, and whether it has the method and
// path already.
func (l requestLines) handler(r *http.Request, gql bool) (slog.Handler, bool) {
	if gql {
		switch r.Method {
		case http.MethodGet:
			return l.gqlGet, true
		case http.MethodPost:
			return l.gqlPost, true
		}
	}
	return l.base, false
}

// costString renders a cost of a known small type; anything else is
// summarised, never walked.
func costString(v any) string {
	switch c := v.(type) {
	case int:
		return strconv.Itoa(c)
	case int64:
		return strconv.FormatInt(c, 10)
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64)
	case string:
		return c
	case interface{ String() string }:
		return c.String()
	case map[string]any:
		for _, k := range []string{"requested", "total", "cost", "value"} {
			if x, ok := c[k]; ok {
				return costString(x)
			}
		}
	}
	return "?"
}

// requestIDHandler adds request_id to every record logged with a request's
// context.
type requestIDHandler struct{ slog.Handler }

// WithRequestIDs returns l with request_id added to every record logged
// with a request's context (RequestID).
func WithRequestIDs(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(requestIDHandler); ok {
		return l
	}
	return slog.New(requestIDHandler{l.Handler()})
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
