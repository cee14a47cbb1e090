package outbound

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names exported by the client. Every metric is labelled by host only
// (scheme://host:port, or "other" beyond Config.MaxHosts), plus a small
// fixed set of outcome/reason values, so label cardinality stays bounded.
const (
	MetricRequests             = "incidentlib_outbound_requests_total"
	MetricRequestDuration      = "incidentlib_outbound_request_duration_seconds"
	MetricConnReused           = "incidentlib_outbound_conn_reused_total"
	MetricConnNew              = "incidentlib_outbound_conn_new_total"
	MetricRetries              = "incidentlib_outbound_retries_total"
	MetricRetryBudgetExhausted = "incidentlib_outbound_retry_budget_exhausted_total"
	MetricBreakerState         = "incidentlib_outbound_breaker_state"
)

// Outcome label values of incidentlib_outbound_requests_total, one per attempt.
const (
	OutcomeSuccess     = "success"      // response with status < 400
	OutcomeHTTP4xx     = "http_4xx"     // response with status 4xx
	OutcomeHTTP5xx     = "http_5xx"     // response with status >= 500
	OutcomeError       = "error"        // no response: connection error or timeout
	OutcomeBreakerOpen = "breaker_open" // rejected by an open (or saturated half-open) breaker
	OutcomeCanceled    = "canceled"     // the caller cancelled its context
)

// otherHost is the host label shared by the hosts beyond Config.MaxHosts.
const otherHost = "other"

// metrics holds the prometheus collectors of one Client.
type metrics struct {
	requests        *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	connReused      *prometheus.CounterVec
	connNew         *prometheus.CounterVec
	retries         *prometheus.CounterVec
	budgetExhausted *prometheus.CounterVec
	breakerState    *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: counterVec(MetricRequests,
			"Outbound HTTP attempts by upstream host and outcome (success, http_4xx, http_5xx, error, breaker_open, canceled).",
			"host", "outcome"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    "Time from sending an outbound attempt to its response headers or error, in seconds.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
		}, []string{"host"}),
		connReused: counterVec(MetricConnReused,
			"Outbound attempts that reused a pooled keep-alive connection (httptrace GotConn.Reused).",
			"host"),
		connNew: counterVec(MetricConnNew,
			"Outbound attempts that had to open a new connection (httptrace GotConn, not Reused).",
			"host"),
		retries: counterVec(MetricRetries,
			"Outbound retries by upstream host and reason (status_429, status_500, status_502, status_503, status_504, conn_error, timeout).",
			"host", "reason"),
		budgetExhausted: counterVec(MetricRetryBudgetExhausted,
			"Retries not made because the upstream's retry budget was exhausted.",
			"host"),
		breakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricBreakerState,
			Help: "Circuit breaker state per upstream host: 0 closed, 1 half-open, 2 open.",
		}, []string{"host"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	registerInto(reg, &m.requests, &err)
	registerInto(reg, &m.duration, &err)
	registerInto(reg, &m.connReused, &err)
	registerInto(reg, &m.connNew, &err)
	registerInto(reg, &m.retries, &err)
	registerInto(reg, &m.budgetExhausted, &err)
	registerInto(reg, &m.breakerState, &err)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// counterVec is a counter with labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// registerInto registers *c, or replaces it with the identical collector
// already registered (so that several Clients can share one registry).
// Once *err holds an error it does nothing, so that a run of
// registrations is checked once, at its end.
func registerInto[T prometheus.Collector](reg prometheus.Registerer, c *T, err *error) {
	if *err != nil {
		return
	}
	if *err = reg.Register(*c); *err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(*err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				*c, *err = existing, nil
			}
		}
	}
}

// Stats is a snapshot of the client's plain counters (handy in tests and
// debug endpoints; the prometheus metrics carry the same data per host).
type Stats struct {
	// Requests is the number of calls to Do (logical requests).
	Requests uint64
	// Attempts is the number of attempts handed to the transport.
	Attempts uint64
	// NewConns is the number of attempts that opened a new connection.
	NewConns uint64
	// ReusedConns is the number of attempts that reused a pooled connection.
	ReusedConns uint64
	// Retries is the number of retries made (attempts after the first).
	Retries uint64
	// RetryBudgetExhausted counts retries refused by the retry budget.
	RetryBudgetExhausted uint64
	// RetryAfterTooLong counts retryable responses returned without retry
	// because their Retry-After exceeded Config.BackoffCap.
	RetryAfterTooLong uint64
	// BreakerRejections counts attempts failed fast with ErrCircuitOpen.
	BreakerRejections uint64
	// Successes counts attempts answered with a status < 400.
	Successes uint64
	// HTTP4xx counts attempts answered with a 4xx status (429 included).
	HTTP4xx uint64
	// HTTP5xx counts attempts answered with a 5xx status.
	HTTP5xx uint64
	// Errors counts attempts that got no response (connection error or
	// deadline).
	Errors uint64
	// Canceled counts attempts ended by the caller cancelling its context.
	Canceled uint64
}

// stats holds the atomic counters behind Stats.
type stats struct {
	requests, attempts, newConns, reusedConns, retries    atomic.Uint64
	budgetExhausted, retryAfterTooLong, breakerRejections atomic.Uint64
	successes, http4xx, http5xx, errors, canceled         atomic.Uint64
}

func (s *stats) snapshot() Stats {
	return Stats{
		Requests:             s.requests.Load(),
		Attempts:             s.attempts.Load(),
		NewConns:             s.newConns.Load(),
		ReusedConns:          s.reusedConns.Load(),
		Retries:              s.retries.Load(),
		RetryBudgetExhausted: s.budgetExhausted.Load(),
		RetryAfterTooLong:    s.retryAfterTooLong.Load(),
		BreakerRejections:    s.breakerRejections.Load(),
		Successes:            s.successes.Load(),
		HTTP4xx:              s.http4xx.Load(),
		HTTP5xx:              s.http5xx.Load(),
		Errors:               s.errors.Load(),
		Canceled:             s.canceled.Load(),
	}
}
