package outbound

import (
	"errors"
	"net"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
)

// ErrCircuitOpen is returned (wrapped with the upstream host and attempt) when
// the circuit breaker of the upstream is open, or half-open with all its
// probe slots taken: the request failed fast without reaching the upstream.
// Test with errors.Is(err, outbound.ErrCircuitOpen).
var ErrCircuitOpen = errors.New("circuit breaker open")

// Breaker outcomes reported to gobreaker for one attempt.
var (
	// errBreakerFailure marks an attempt that counts as a failure: 5xx, 429,
	// connection error, or a deadline exceeded.
	errBreakerFailure = errors.New("upstream failure")
	// errBreakerExcluded marks an attempt that must not count at all: the
	// caller cancelled its context.
	errBreakerExcluded = errors.New("caller canceled")
)

// Breaker state names returned by BreakerState, as gobreaker spells them.
const (
	BreakerClosed   = "closed"
	BreakerHalfOpen = "half-open"
	BreakerOpen     = "open"
)

// upstream is the per-host state: circuit breaker, retry budget and the
// metric children curried with the host label.
type upstream struct {
	key     string // scheme://host:port, or "other"
	breaker *gobreaker.TwoStepCircuitBreaker[struct{}]
	budget  *retryBudget
	trace   *httptrace.ClientTrace

	outcomes        map[string]prometheus.Counter
	duration        prometheus.Observer
	budgetExhausted prometheus.Counter
	retries         *prometheus.CounterVec // curried with host
}

func (c *Client) newUpstream(key string) *upstream {
	m := c.metrics
	up := &upstream{
		key:             key,
		budget:          newRetryBudget(c.cfg.RetryBudgetRatio, c.cfg.RetryBudgetWindow, c.cfg.RetryBudgetMinPerSecond),
		outcomes:        make(map[string]prometheus.Counter, 6),
		duration:        m.duration.WithLabelValues(key),
		budgetExhausted: m.budgetExhausted.WithLabelValues(key),
		retries:         m.retries.MustCurryWith(prometheus.Labels{"host": key}),
	}
	for _, o := range []string{OutcomeSuccess, OutcomeHTTP4xx, OutcomeHTTP5xx, OutcomeError, OutcomeBreakerOpen, OutcomeCanceled} {
		up.outcomes[o] = m.requests.WithLabelValues(key, o)
	}
	reused, fresh := m.connReused.WithLabelValues(key), m.connNew.WithLabelValues(key)
	st := &c.stats
	up.trace = &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reused.Inc()
				st.reusedConns.Add(1)
			} else {
				fresh.Inc()
				st.newConns.Add(1)
			}
		},
	}
	gauge := m.breakerState.WithLabelValues(key)
	gauge.Set(0)

	minReq := uint32(c.cfg.BreakerMinRequests)
	ratio := c.cfg.BreakerFailureRatio
	window := c.cfg.BreakerWindow
	up.breaker = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         key,
		MaxRequests:  uint32(c.cfg.BreakerHalfOpenRequests),
		Interval:     window,
		BucketPeriod: breakerBucket(window),
		Timeout:      c.cfg.BreakerOpenTimeout,
		ReadyToTrip: func(cn gobreaker.Counts) bool {
			done := uint64(cn.TotalSuccesses) + uint64(cn.TotalFailures)
			return done >= uint64(minReq) && float64(cn.TotalFailures) >= ratio*float64(done)
		},
		OnStateChange: func(_ string, _, to gobreaker.State) {
			gauge.Set(stateValue(to))
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return errors.Is(err, errBreakerExcluded) },
	})
	return up
}

// breakerBucket splits the breaker window into 10 buckets so counts roll
// over gradually instead of being reset all at once.
func breakerBucket(window time.Duration) time.Duration {
	if b := window / 10; b > 0 {
		return b
	}
	return 0
}

// stateValue maps a breaker state to the gauge value: 0 closed, 1 half-open,
// 2 open, which is gobreaker's own numbering of State (client_test.go
// checks each value).
func stateValue(s gobreaker.State) float64 { return float64(s) }

// upstreamFor returns the per-host state for key (see hostKey), creating it
// on first use. Beyond Config.MaxHosts distinct hosts, the shared "other"
// entry is used.
func (c *Client) upstreamFor(key string) *upstream {
	c.mu.RLock()
	up, ok := c.upstreams[key]
	c.mu.RUnlock()
	if ok {
		return up
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if up, ok := c.upstreams[key]; ok {
		return up
	}
	if len(c.upstreams) >= c.cfg.MaxHosts {
		if c.other == nil {
			c.other = c.newUpstream(otherHost)
		}
		return c.other
	}
	up = c.newUpstream(key)
	c.upstreams[key] = up
	return up
}

// hostKey normalises a URL to scheme://host:port with the default port made
// explicit, e.g. "http://127.0.0.1:8080" or "https://example.org:443".
func hostKey(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// BreakerState returns the circuit breaker state of an upstream: "closed",
// "half-open" or "open". host may be "scheme://host:port" or any URL of that
// upstream (its path is ignored). A host never called reports "closed".
func (c *Client) BreakerState(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return BreakerClosed
	}
	key := hostKey(u)
	c.mu.RLock()
	up, ok := c.upstreams[key]
	if !ok && len(c.upstreams) >= c.cfg.MaxHosts && c.other != nil {
		up, ok = c.other, true
	}
	c.mu.RUnlock()
	if !ok {
		return BreakerClosed
	}
	return up.breaker.State().String()
}
