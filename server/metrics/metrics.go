// Package metrics holds the server's Prometheus metrics: GraphQL
// operations and errors, HTTP requests, dataloader batches, the executor
// that answered, the store's commit durations and its figures (read at
// scrape time through an incidentlib.StoreMonitor), and the search queue.
// The HTTP edge's own metrics (response cache, request durations, persisted
// queries) are registered by server/gqledge on the same registry.
package metrics

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
)

// Label values a client can influence are bounded in number and in
// length, so that no client can make /metrics large:
//
//   - operation: the first maxOperationNames distinct names, each a
//     GraphQL name of at most maxOperationNameBytes; a longer one is
//     "long:" and 16 hex digits of its SHA-256 (stable across restarts and
//     servers), a string that is not a GraphQL name (an operationName sent
//     with no such operation) "invalid", an operation without a name
//     "anonymous", and every name past the cap "other".
//   - code: an error code as the server writes them (upper case, digits
//     and underscores, at most maxCodeBytes), the first maxCodes of them;
//     anything else "other".
//
// The other labels (path, status, executor, loader, cache outcome) take
// values the server chooses from a fixed set.
const (
	maxOperationNames     = 200
	maxOperationNameBytes = 100
	maxCodes              = 64
	maxCodeBytes          = 40
)

// Metrics are the server's Prometheus metrics.
type Metrics struct {
	gatherer prometheus.Gatherer
	reg      prometheus.Registerer

	opDuration   *prometheus.HistogramVec
	opErrors     *prometheus.CounterVec
	httpRequests *prometheus.CounterVec
	loaderBatch  *prometheus.CounterVec
	loaderKeys   *prometheus.CounterVec
	// loaders holds each loader's two counters, looked up once.
	loaders map[string]loaderCounters
	commit  prometheus.Histogram
	// Operations per executor (graph.FastReads or gqlgen's).
	executor                      *prometheus.CounterVec
	executorFast, executorGeneric prometheus.Counter

	// searchWaiting reads the search service's queue (SetSearch).
	searchWaiting atomic.Pointer[func() int]
	// searchSaveFailures reads the search index's failed saves.
	searchSaveFailures atomic.Pointer[func() uint64]

	ops   labelSet // operation names (OperationLabel)
	codes labelSet // error codes (CodeLabel)
}

// labelSet admits the first max distinct values of a label that a client
// can influence, and answers "other" for every value after them, so that
// no client can grow /metrics without bound.
type labelSet struct {
	mu   sync.Mutex
	seen map[string]bool
	max  int
}

func newLabelSet(max int) labelSet { return labelSet{seen: map[string]bool{}, max: max} }

// admit returns v if it is, or now becomes, one of the set's values, else
// "other".
func (l *labelSet) admit(v string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[v] {
		return v
	}
	if len(l.seen) >= l.max {
		return "other"
	}
	l.seen[v] = true
	return v
}

// New registers the metrics on reg; when reg is nil a private registry is
// used. The store is not needed: its commits are reported through
// ObserveCommit and its figures through WatchStore.
func New(reg prometheus.Registerer) (*Metrics, error) {
	var gatherer prometheus.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		gatherer = g
	} else {
		gatherer = prometheus.DefaultGatherer
	}
	m := &Metrics{
		gatherer: gatherer,
		reg:      reg,
		ops:      newLabelSet(maxOperationNames),
		codes:    newLabelSet(maxCodes),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "incidentlib_graphql_request_duration_seconds",
			Help:    "Time to execute a GraphQL operation, by operation name.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
		opErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_graphql_errors_total",
			Help: "GraphQL responses with errors, by operation name and error code.",
		}, []string{"operation", "code"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_http_requests_total",
			Help: "HTTP requests by path and status code.",
		}, []string{"path", "code"}),
		loaderBatch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_dataloader_batches_total",
			Help: "Batches read by each dataloader.",
		}, []string{"loader"}),
		loaderKeys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_dataloader_keys_total",
			Help: "Keys read by each dataloader.",
		}, []string{"loader"}),
		executor: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_graphql_executor_operations_total",
			Help: "Read queries answered by graph.FastReads (executor=\"fast\") or handed to gqlgen's executor (executor=\"gqlgen\").",
		}, []string{"executor"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "incidentlib_bbolt_write_commit_seconds",
			Help:    "Duration of bbolt write transactions, commit and fsync included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	m.executorFast, m.executorGeneric = m.executor.WithLabelValues("fast"), m.executor.WithLabelValues("gqlgen")
	m.loaders = make(map[string]loaderCounters, len(graph.LoaderNames))
	for _, name := range graph.LoaderNames {
		m.loaders[name] = loaderCounters{m.loaderBatch.WithLabelValues(name), m.loaderKeys.WithLabelValues(name)}
	}
	searchWaiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "incidentlib_search_waiting",
		Help: "Searches waiting for their turn: no more than serve --search-concurrency run at once.",
	}, func() float64 {
		if f := m.searchWaiting.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	searchSaveFailures := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "incidentlib_search_index_save_failures_total",
		Help: "Saves of the search index that failed (a full disk): the index served from memory meanwhile, and the next save retries.",
	}, func() float64 {
		if f := m.searchSaveFailures.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	for _, c := range []prometheus.Collector{m.opDuration, m.opErrors, m.httpRequests, m.loaderBatch, m.loaderKeys, m.executor, m.commit, searchWaiting, searchSaveFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m, nil
}

// Registerer is where the metrics are registered; the HTTP edge registers
// its own there too.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Gatherer reads the registry the metrics are on.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.gatherer }

// Handler serves the metrics of the registry (GET /metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// ObserveCommit records the duration of one write commit of the store
// (storage.Options.ObserveCommit).
func (m *Metrics) ObserveCommit(d time.Duration) { m.commit.Observe(d.Seconds()) }

// WatchStore registers the store's figures, read from mon at scrape time:
// the bbolt gauges, the sequence and the writes in flight.
func (m *Metrics) WatchStore(mon incidentlib.StoreMonitor) error {
	return m.reg.Register(newStoreCollector(mon))
}

// SearchQueue is what the search index tells the metrics: how many
// searches wait for their turn now, and how many saves of the index
// failed (search.Index has both).
type SearchQueue interface {
	Waiting() int
	SaveFailures() uint64
}

// ObserveSearch reads q for incidentlib_search_waiting and
// incidentlib_search_index_save_failures_total at scrape time.
func (m *Metrics) ObserveSearch(q SearchQueue) {
	waiting, failures := q.Waiting, q.SaveFailures
	m.searchWaiting.Store(&waiting)
	m.searchSaveFailures.Store(&failures)
}

// ObserveFastReads counts the operations fr answers and hands on.
func (m *Metrics) ObserveFastReads(fr *graph.FastReads) {
	fr.Observe = func(fast bool) {
		if fast {
			m.executorFast.Inc()
		} else {
			m.executorGeneric.Inc()
		}
	}
}

// Batch counts one dataloader batch.
func (m *Metrics) Batch(loader string, keys int) {
	c, ok := m.loaders[loader]
	if !ok { // a loader missing from graph.LoaderNames
		c = loaderCounters{m.loaderBatch.WithLabelValues(loader), m.loaderKeys.WithLabelValues(loader)}
	}
	c.batches.Inc()
	c.keys.Add(float64(keys))
}

// loaderCounters are one loader's series of loaderBatch and loaderKeys.
type loaderCounters struct{ batches, keys prometheus.Counter }

// OperationLabel is the operation label of an operation named name (see
// maxOperationNames): the name, "long:<hex>" for a long one, "invalid"
// for one that is not a GraphQL name, "anonymous" without a name, "other"
// past maxOperationNames names.
func (m *Metrics) OperationLabel(name string) string {
	switch {
	case name == "":
		return "anonymous"
	case len(name) > maxOperationNameBytes:
		sum := sha256.Sum256([]byte(name))
		name = "long:" + hex.EncodeToString(sum[:8])
	case !isName(name):
		return "invalid"
	}
	return m.ops.admit(name)
}

// CodeLabel is the code label of an error code (see maxCodes).
func (m *Metrics) CodeLabel(code string) string {
	if code == "" {
		return "GRAPHQL"
	}
	if len(code) > maxCodeBytes || !isCode(code) {
		return "other"
	}
	return m.codes.admit(code)
}

// isName says whether s is a GraphQL name: /[_A-Za-z][_0-9A-Za-z]*/.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return s != ""
}

// isCode says whether s is written as the server writes error codes.
func isCode(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return s != ""
}

// CountError counts one error of an operation (by its label) with code,
// for a refusal answered before gqlgen ran the operation.
func (m *Metrics) CountError(op, code string) {
	m.opErrors.WithLabelValues(m.OperationLabel(op), m.CodeLabel(code)).Inc()
}

// HTTPRequest counts one answered request by path and status.
func (m *Metrics) HTTPRequest(r *http.Request, status int) {
	path := r.URL.Path
	switch path {
	case "/graphql", "/mcp", "/healthz", "/readyz", "/metrics", "/", "/admin/backup", "/api/v1/changes", "/api/v1/incidents":
	default:
		if strings.HasPrefix(path, "/api/v1/incidents/") {
			path = "/api/v1/incidents/{id}"
		} else {
			path = "other"
		}
	}
	m.httpRequests.WithLabelValues(path, strconv.Itoa(status)).Inc()
}

// operationTracer records each operation's duration and errors.
type operationTracer struct{ m *Metrics }

// OperationTracer is the gqlgen extension that records each operation's
// duration and errors.
func (m *Metrics) OperationTracer() graphql.HandlerExtension { return operationTracer{m} }

func (operationTracer) ExtensionName() string                   { return "OperationMetrics" }
func (operationTracer) Validate(graphql.ExecutableSchema) error { return nil }

func (t operationTracer) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	start := time.Now()
	resp := next(ctx)
	if !graphql.HasOperationContext(ctx) {
		return resp
	}
	op := t.m.OperationLabel(OperationName(graphql.GetOperationContext(ctx)))
	t.m.opDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if resp != nil {
		for _, e := range resp.Errors {
			code, _ := e.Extensions["code"].(string)
			t.m.opErrors.WithLabelValues(op, t.m.CodeLabel(code)).Inc()
		}
	}
	return resp
}

// OperationName is the name of the operation being run: the request's
// operationName, else the name in the document.
func OperationName(oc *graphql.OperationContext) string {
	if oc.OperationName != "" {
		return oc.OperationName
	}
	if oc.Operation != nil {
		return oc.Operation.Name
	}
	return ""
}
