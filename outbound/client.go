// Package outbound is incidentlib's single outbound HTTP client.
//
// It exists because of two postmortems: a GraphQL BFF that opened a new TCP
// connection for every backend call (keep-alive off) and went from 720 to
// 3,600 requests/s once that was fixed, and one whose remediation was an
// explicit pool size, idle timeout and keep-alive, exponential backoff with a
// small base and a cap instead of a fixed 1 s retry, a circuit breaker, and
// tests of the pool under backpressure. The client therefore:
//
//   - uses one explicitly built, shared *http.Transport (never
//     http.DefaultTransport) with every pool limit and timeout set from
//     Config, and MaxIdleConnsPerHost large enough for keep-alive to work
//     under concurrency;
//   - retries only idempotent requests (or POSTs with an Idempotency-Key),
//     only for retryable outcomes, with capped exponential backoff and full
//     jitter, a per-host retry budget, and Retry-After honoured only up to
//     the backoff cap;
//   - puts a circuit breaker (sony/gobreaker) in front of each upstream host;
//   - always drains (bounded) and closes response bodies it does not hand out;
//   - exports prometheus metrics labelled by host only.
package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// ErrResponseTooLarge is returned when a response body exceeds
// Config.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("response body exceeds MaxResponseBytes")

// StatusError is returned by GetJSON for a non-2xx response.
type StatusError struct {
	// Host is the upstream, as scheme://host:port.
	Host string
	// StatusCode is the HTTP status of the response.
	StatusCode int
	// Body holds the first bytes (at most 512) of the response body.
	Body []byte
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("outbound: %s answered %d %s", e.Host, e.StatusCode, http.StatusText(e.StatusCode))
}

// Client is the shared outbound HTTP client. It is safe for concurrent use;
// create one per process (or per group of upstreams) and reuse it.
type Client struct {
	cfg       Config
	transport *http.Transport
	http      *http.Client
	metrics   *metrics
	stats     stats

	mu        sync.RWMutex
	upstreams map[string]*upstream
	other     *upstream // shared entry beyond cfg.MaxHosts
}

// New validates cfg and builds a Client with its own *http.Transport. reg may
// be nil, in which case no metrics are registered (Stats still works).
// Several Clients may share one registry; they then share the collectors.
func New(cfg Config, reg prometheus.Registerer) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("outbound: registering metrics: %w", err)
	}
	tr := newTransport(cfg)
	c := &Client{
		cfg:       cfg,
		transport: tr,
		// No Client.Timeout: deadlines come from the per-attempt context so
		// that a slow body read by the caller is bounded the same way.
		http:      &http.Client{Transport: tr},
		metrics:   m,
		upstreams: make(map[string]*upstream),
	}
	return c, nil
}

// newTransport builds the pooled transport, in the style of
// hashicorp/go-cleanhttp: a fresh value with every limit set explicitly.
func newTransport(cfg Config) *http.Transport {
	dialer := &net.Dialer{
		Timeout:   cfg.DialTimeout,
		KeepAlive: cfg.KeepAlive,
	}
	dial, proxy := dialer.DialContext, http.ProxyFromEnvironment
	if cfg.DialContext != nil {
		dial, proxy = cfg.DialContext, nil
	}
	return &http.Transport{
		Proxy:                  proxy,
		DialContext:            dial,
		ForceAttemptHTTP2:      true,
		MaxConnsPerHost:        cfg.MaxConnsPerHost,
		MaxIdleConnsPerHost:    cfg.MaxIdleConnsPerHost,
		MaxIdleConns:           cfg.MaxIdleConns,
		IdleConnTimeout:        cfg.IdleConnTimeout,
		TLSHandshakeTimeout:    cfg.TLSHandshakeTimeout,
		ResponseHeaderTimeout:  cfg.ResponseHeaderTimeout,
		ExpectContinueTimeout:  cfg.ExpectContinueTimeout,
		MaxResponseHeaderBytes: cfg.MaxResponseHeaderBytes,
		DisableKeepAlives:      cfg.DisableKeepAlives,
	}
}

// Close closes the idle pooled connections. In-flight requests are not
// interrupted; the Client stays usable (new connections are dialled).
func (c *Client) Close() {
	c.transport.CloseIdleConnections()
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	return c.stats.snapshot()
}

// Config returns the configuration the client was built with.
func (c *Client) Config() Config {
	return c.cfg
}

// Do sends req through the circuit breaker of its host, retrying idempotent
// requests on retryable outcomes within the retry budget.
//
// The deadline is the one of req.Context(); if it has none, each attempt gets
// Config.RequestTimeout. On success the caller owns resp.Body and must Close
// it; Close drains at most Config.MaxDrainBytes (for at most
// Config.DrainTimeout) so the connection can be reused, and reading more
// than Config.MaxResponseBytes yields ErrResponseTooLarge. Every response
// the client does not return is drained (bounded) and closed by the client.
//
// Retried: GET, HEAD, OPTIONS, PUT, DELETE, and POST with an Idempotency-Key
// header, provided the body is absent or req.GetBody is set; on connection
// errors and per-attempt timeouts (not on caller cancellation or the
// caller's own deadline), 429, 502, 503, 504, 500 if Config.RetryOn500 and
// 408 if Config.RetryOn408. An error that says it is permanent (it, or an
// error it wraps, has a Permanent() bool method answering true, such as a
// dial the caller's Config.DialContext refused) is returned at once and is
// not counted by the breaker: the request never reached the host.
// A Retry-After longer than Config.BackoffCap stops the retries and the
// response is returned at once.
//
// Breaker verdicts: 5xx, 429, connection errors and deadlines (the client's
// per-attempt timeout or the caller's deadline, both mean the upstream was
// too slow) are failures; other responses are successes; an attempt ended by
// the caller cancelling its context is not counted at all.
//
// Like http.Client.Do, a non-2xx status is not an error: a retryable status
// that could not be retried (retries, budget or Retry-After exhausted) is
// returned as the response. Errors name the host and the attempt and wrap the
// cause: ErrCircuitOpen, context.Canceled, context.DeadlineExceeded, or the
// transport's error.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if req == nil || req.URL == nil {
		return nil, errors.New("outbound: nil request or request URL")
	}
	ctx := req.Context()
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := hostKey(req.URL)
	up := c.upstreamFor(host)
	c.stats.requests.Add(1)
	up.budget.onRequest(time.Now())

	maxAttempts := 1
	if isIdempotent(req) && bodyReplayable(req) {
		maxAttempts += c.cfg.MaxRetries
	}
	var lastErr error // error of the previous attempt, for context
	for attempt := 1; ; attempt++ {
		where := func() string { return fmt.Sprintf("%s %s attempt %d/%d", method, host, attempt, maxAttempts) }

		done, err := up.breaker.Allow()
		if err != nil {
			up.outcomes[OutcomeBreakerOpen].Inc()
			c.stats.breakerRejections.Add(1)
			if attempt == 1 && hasBody(req) {
				_ = req.Body.Close() // as http.Client.Do would have
			}
			if lastErr != nil {
				return nil, fmt.Errorf("outbound: %s: %w (previous attempt: %v)", where(), ErrCircuitOpen, lastErr)
			}
			return nil, fmt.Errorf("outbound: %s: %w", where(), ErrCircuitOpen)
		}

		body := req.Body
		if attempt > 1 && hasBody(req) {
			if body, err = req.GetBody(); err != nil {
				done(errBreakerExcluded)
				return nil, fmt.Errorf("outbound: %s: rewinding request body: %w", where(), err)
			}
		}

		resp, cancel, err := c.send(ctx, up, req, body)
		r := c.classify(ctx, up, resp, err)
		done(r.breakerErr)

		if err != nil {
			cancel()
			err = fmt.Errorf("outbound: %s: %w", where(), err)
		}
		if !r.retryable || attempt >= maxAttempts {
			return c.handOut(resp, cancel), err
		}

		// A retry is possible: find out how long to wait.
		wait := fullJitter(c.cfg.BackoffBase, c.cfg.BackoffCap, attempt-1)
		if resp != nil {
			if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				if ra > c.cfg.BackoffCap {
					// Never make anyone wait longer than the cap: give the
					// response back now instead of retrying.
					c.stats.retryAfterTooLong.Add(1)
					return c.handOut(resp, cancel), nil
				}
				wait = max(wait, ra)
			}
		}
		if up.breaker.State() == gobreaker.StateOpen {
			// This failure opened the breaker: the retry would fail fast
			// anyway, and the real response/error is more useful.
			return c.handOut(resp, cancel), err
		}
		if !up.budget.tryRetry(time.Now()) {
			up.budgetExhausted.Inc()
			c.stats.budgetExhausted.Add(1)
			return c.handOut(resp, cancel), err
		}

		// Commit to the retry: this response is not handed out.
		if resp != nil {
			c.discard(resp, cancel)
			cancel()
			lastErr = fmt.Errorf("%s: status %d", where(), resp.StatusCode)
		} else {
			lastErr = err
		}
		up.retries.WithLabelValues(r.reason).Inc()
		c.stats.retries.Add(1)
		if serr := sleepCtx(ctx, wait); serr != nil {
			return nil, fmt.Errorf("outbound: %s %s: backoff before attempt %d interrupted: %w (previous attempt: %v)",
				method, host, attempt+1, serr, lastErr)
		}
	}
}

// send performs one attempt. The returned cancel releases the attempt's
// context; it must be called once the response body is done with.
func (c *Client) send(ctx context.Context, up *upstream, req *http.Request, body io.ReadCloser) (*http.Response, context.CancelFunc, error) {
	// Always a context of our own, so that a stalled body can be cut off
	// (see drain); the caller's deadline applies if it has one.
	var actx context.Context
	var cancel context.CancelFunc
	if _, ok := ctx.Deadline(); ok {
		actx, cancel = context.WithCancel(ctx)
	} else {
		actx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
	}
	actx = httptrace.WithClientTrace(actx, up.trace)

	r := req.Clone(actx)
	r.Body = body
	// traceparent, tracestate: every outbound request, through the OTel
	// API's global propagator (a no-op until tracing.Setup installs the W3C one).
	otel.GetTextMapPropagator().Inject(actx, propagation.HeaderCarrier(r.Header))
	if c.cfg.UserAgent != "" && r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", c.cfg.UserAgent)
	}

	c.stats.attempts.Add(1)
	start := time.Now()
	var resp *http.Response
	var err error
	if c.cfg.NoRedirects {
		resp, err = c.transport.RoundTrip(r)
	} else {
		resp, err = c.http.Do(r)
	}
	up.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		if resp != nil && resp.Body != nil {
			// net/http has already closed it; make sure anyway.
			resp.Body.Close()
		}
		return nil, cancel, err
	}
	return resp, cancel, nil
}

// attemptResult is the classification of one attempt.
type attemptResult struct {
	breakerErr error  // nil (success), errBreakerFailure or errBreakerExcluded
	retryable  bool   // worth retrying if the request is idempotent
	reason     string // bounded retry reason label
}

// classify maps the outcome of one attempt to metrics, breaker verdict and
// retryability.
func (c *Client) classify(ctx context.Context, up *upstream, resp *http.Response, err error) attemptResult {
	if err == nil {
		code := resp.StatusCode
		reason, retry := retryableStatus(code, c.cfg.RetryOn500)
		switch {
		case code >= 500:
			up.outcomes[OutcomeHTTP5xx].Inc()
			c.stats.http5xx.Add(1)
			return attemptResult{breakerErr: errBreakerFailure, retryable: retry, reason: reason}
		case code == http.StatusTooManyRequests:
			up.outcomes[OutcomeHTTP4xx].Inc()
			c.stats.http4xx.Add(1)
			return attemptResult{breakerErr: errBreakerFailure, retryable: true, reason: reason}
		case code == http.StatusRequestTimeout && c.cfg.RetryOn408:
			up.outcomes[OutcomeHTTP4xx].Inc()
			c.stats.http4xx.Add(1)
			return attemptResult{retryable: true, reason: "status_408"}
		case code >= 400:
			up.outcomes[OutcomeHTTP4xx].Inc()
			c.stats.http4xx.Add(1)
			return attemptResult{}
		default:
			up.outcomes[OutcomeSuccess].Inc()
			c.stats.successes.Add(1)
			return attemptResult{}
		}
	}

	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.Canceled):
		// The caller gave up: not the upstream's fault, nothing to retry.
		up.outcomes[OutcomeCanceled].Inc()
		c.stats.canceled.Add(1)
		return attemptResult{breakerErr: errBreakerExcluded}
	case cerr != nil:
		// The caller's own deadline passed while the upstream had the
		// request: a slow upstream, counted as a failure; no time to retry.
		up.outcomes[OutcomeError].Inc()
		c.stats.errors.Add(1)
		return attemptResult{breakerErr: errBreakerFailure}
	}

	up.outcomes[OutcomeError].Inc()
	c.stats.errors.Add(1)
	if permanentError(err) {
		return attemptResult{breakerErr: errBreakerExcluded}
	}
	if !retryableError(err) {
		return attemptResult{breakerErr: errBreakerFailure}
	}
	reason := "conn_error"
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		reason = "timeout"
	}
	return attemptResult{breakerErr: errBreakerFailure, retryable: true, reason: reason}
}

// permanentError reports whether err, or an error it wraps, says it is
// permanent (a Permanent() bool method answering true).
func permanentError(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// retryableError reports whether a transport error (the caller's context
// being still alive) may go away on a new attempt. Certificate problems and
// malformed requests will not.
func retryableError(err error) bool {
	var (
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &invalidErr), errors.As(err, &recordErr):
		return false
	}
	return true
}
