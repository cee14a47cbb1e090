package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/storage"
)

// maxOperationNames bounds the operation label: operation names come from
// clients, and every further name is counted as "other".
const maxOperationNames = 200

// Metrics are the server's Prometheus metrics.
type Metrics struct {
	gatherer prometheus.Gatherer

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

	mu  sync.Mutex
	ops map[string]bool
}

// NewMetrics registers the metrics, including a collector that reads the
// store's statistics at scrape time without a transaction. When reg is nil
// a private registry is used.
func NewMetrics(db *storage.DB, reg prometheus.Registerer) (*Metrics, error) {
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
		ops:      map[string]bool{},
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
	writesInFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "incidentlib_store_writes_in_flight",
		Help: "Mutations waiting for or running their write transaction (more than one share a commit through bbolt's Batch).",
	}, func() float64 { return float64(db.StoreStats().WritesInFlight) })
	searchWaiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "incidentlib_search_waiting",
		Help: "Searches waiting for their turn: no more than serve --search-concurrency run at once.",
	}, func() float64 {
		if f := m.searchWaiting.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	for _, c := range []prometheus.Collector{m.opDuration, m.opErrors, m.httpRequests, m.loaderBatch, m.loaderKeys, m.executor, m.commit, newStoreCollector(db), writesInFlight, searchWaiting} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m, nil
}

// ObserveCommit records the duration of one write commit: give it to the
// store as storage.Options.ObserveCommit.
func (m *Metrics) ObserveCommit(d time.Duration) { m.commit.Observe(d.Seconds()) }

// observeSearch reads the queue of svc, when it has one, for
// incidentlib_search_waiting.
func (m *Metrics) observeSearch(svc incidentlib.SearchService) {
	if q, ok := svc.(interface{ Waiting() int }); ok {
		f := q.Waiting
		m.searchWaiting.Store(&f)
	}
}

// observeFastReads counts the operations fr answers and hands on.
func (m *Metrics) observeFastReads(fr *graph.FastReads) {
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

func (m *Metrics) operationLabel(name string) string {
	if name == "" {
		return "anonymous"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ops[name] {
		return name
	}
	if len(m.ops) >= maxOperationNames {
		return "other"
	}
	m.ops[name] = true
	return name
}

func (m *Metrics) httpRequest(r *http.Request, status int, _ time.Duration) {
	path := r.URL.Path
	switch path {
	case "/graphql", "/healthz", "/readyz", "/metrics", "/", "/admin/backup", "/api/v1/changes", "/api/v1/incidents":
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

func (m *Metrics) operationTracer() graphql.HandlerExtension { return operationTracer{m} }

func (operationTracer) ExtensionName() string                   { return "OperationMetrics" }
func (operationTracer) Validate(graphql.ExecutableSchema) error { return nil }

func (t operationTracer) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	start := time.Now()
	resp := next(ctx)
	if !graphql.HasOperationContext(ctx) {
		return resp
	}
	op := t.m.operationLabel(OperationName(graphql.GetOperationContext(ctx)))
	t.m.opDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if resp != nil {
		for _, e := range resp.Errors {
			code, _ := e.Extensions["code"].(string)
			if code == "" {
				code = "GRAPHQL"
			}
			t.m.opErrors.WithLabelValues(op, code).Inc()
		}
	}
	return resp
}

// storeCollector reads the store's statistics at scrape time. bbolt's
// Stats takes only its statistics lock, never a transaction, so a scrape
// never waits on the store's writers (seed 000: monitoring must not depend
// on the thing that failed).
type storeCollector struct {
	db                                             *storage.DB
	readTx, openTx, free, pending, freeAlloc, used *prometheus.Desc
	fileBytes, seq, pageSize                       *prometheus.Desc
}

func newStoreCollector(db *storage.DB) *storeCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &storeCollector{
		db:        db,
		readTx:    d("incidentlib_bbolt_read_tx_total", "Read transactions started (bbolt Stats().TxN)."),
		openTx:    d("incidentlib_bbolt_open_read_tx", "Read transactions open now."),
		free:      d("incidentlib_bbolt_free_pages", "Free pages on the freelist."),
		pending:   d("incidentlib_bbolt_pending_pages", "Pages freed but still held by open read transactions."),
		freeAlloc: d("incidentlib_bbolt_free_alloc_bytes", "Bytes allocated in free pages."),
		used:      d("incidentlib_bbolt_freelist_bytes", "Bytes the freelist takes in use (bbolt FreelistInuse)."),
		fileBytes: d("incidentlib_bbolt_file_bytes", "Size of the database file."),
		seq:       d("incidentlib_store_sequence", "The store's change sequence."),
		pageSize:  d("incidentlib_bbolt_page_bytes", "The database page size."),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.readTx, c.openTx, c.free, c.pending, c.freeAlloc, c.used, c.fileBytes, c.seq, c.pageSize} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.db.StoreStats()
	ch <- prometheus.MustNewConstMetric(c.readTx, prometheus.CounterValue, float64(s.ReadTxTotal))
	ch <- prometheus.MustNewConstMetric(c.openTx, prometheus.GaugeValue, float64(s.OpenReadTx))
	ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(s.FreePages))
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.PendingPages))
	ch <- prometheus.MustNewConstMetric(c.freeAlloc, prometheus.GaugeValue, float64(s.FreeAllocBytes))
	ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(s.FreelistBytes))
	ch <- prometheus.MustNewConstMetric(c.fileBytes, prometheus.GaugeValue, float64(s.FileBytes))
	ch <- prometheus.MustNewConstMetric(c.seq, prometheus.GaugeValue, float64(s.Seq))
	ch <- prometheus.MustNewConstMetric(c.pageSize, prometheus.GaugeValue, float64(s.PageBytes))
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
