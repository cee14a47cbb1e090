package server

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Request logging: one JSON line (log/slog) per request with the request
// id (request_id), method, path, status, duration, bytes written, and for GraphQL the
// operation name, the cost when known, the cache outcome and a short hash
// of the document. Sizes are bounded: documents and variables are never
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

	queryPrefix, varsPrefix string

	slot *cacheSlot // while the GraphQL handler runs a cacheable request
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

// logWriter records the status and the bytes written.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *logWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
func (o *ops) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reqState{id: requestID(r)}
		ctx := context.WithValue(r.Context(), stateKey{}, st)
		st.debug = o.logRequests && o.logger.Enabled(ctx, slog.LevelDebug)
		w.Header().Set("X-Request-Id", st.id)
		lw := &logWriter{ResponseWriter: w}
		o.reqMetrics.inFlight.Inc()
		defer o.reqMetrics.inFlight.Dec()
		next.ServeHTTP(lw, r.WithContext(ctx))
		d := time.Since(start)
		if lw.status == 0 {
			lw.status = http.StatusOK
		}
		gql := r.URL.Path == "/graphql"
		if gql {
			cache := st.cache
			if cache == "" {
				cache = cacheBypass
			}
			o.reqMetrics.duration.WithLabelValues(o.m.operationLabel(st.op), cache).Observe(d.Seconds())
		}
		if !o.logRequests {
			return
		}
		level := slog.LevelInfo
		switch {
		case lw.status >= 500:
			level = slog.LevelError
		case !gql && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics"):
			level = slog.LevelDebug
		}
		if !o.logger.Enabled(ctx, level) {
			return
		}
		attrs := make([]slog.Attr, 0, 14)
		attrs = append(attrs,
			slog.String("request_id", st.id),
			slog.String("method", r.Method),
			slog.String("path", truncate(r.URL.Path, logPrefixBytes)),
			slog.Int("status", lw.status),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
			slog.Int("bytes", lw.bytes),
			slog.String("remote", r.RemoteAddr),
		)
		if gql {
			attrs = append(attrs, slog.String("op", truncate(st.op, logPrefixBytes)), slog.String("cache", st.cache))
			if st.docHash != "" {
				attrs = append(attrs, slog.String("doc", truncate(st.docHash, 16)))
			}
			if st.cost != nil {
				attrs = append(attrs, slog.String("cost", truncate(costString(st.cost), 32)))
			}
			if st.queryPrefix != "" {
				attrs = append(attrs, slog.String("query", st.queryPrefix))
			}
			if st.varsPrefix != "" {
				attrs = append(attrs, slog.String("variables", st.varsPrefix))
			}
		}
		// The request id is in attrs: a logger that adds it from the
		// context (withRequestIDs) is not given the context to add it twice.
		o.logger.LogAttrs(context.Background(), level, "request", attrs...)
	})
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
