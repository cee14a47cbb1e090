package outbound

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"
)

// Config holds every limit of the outbound client. Each field documents its
// unit and the value DefaultConfig gives it. Start from DefaultConfig and
// override what you need; a zero Config is invalid on purpose (Validate
// refuses it) so that no limit is ever left implicit.
type Config struct {
	// MaxConnsPerHost caps the TCP connections (dialing + active + idle) to
	// one upstream host:port. Requests beyond it wait for a connection until
	// their context ends (backpressure instead of a connection storm).
	// Unit: connections. Default: 64. 0 means "no limit" (not recommended);
	// negative values are refused.
	MaxConnsPerHost int

	// MaxIdleConnsPerHost is how many idle keep-alive connections are kept
	// per upstream host. Go's built-in default is 2, which silently defeats
	// keep-alive under concurrency: every request above 2 in flight opens a
	// new TCP connection and throws it away afterwards.
	// Unit: connections. Default: 64. Must be > 0 and, when MaxConnsPerHost
	// is set, <= MaxConnsPerHost.
	MaxIdleConnsPerHost int

	// MaxIdleConns caps the idle connections kept across all upstream hosts.
	// Unit: connections. Default: 512. Must be >= MaxIdleConnsPerHost.
	MaxIdleConns int

	// IdleConnTimeout is how long an idle connection stays in the pool
	// before it is closed. Unit: duration. Default: 90s.
	IdleConnTimeout time.Duration

	// DialTimeout bounds establishing one TCP connection.
	// Unit: duration. Default: 5s.
	DialTimeout time.Duration

	// KeepAlive is the TCP keep-alive probe period of the connections.
	// Unit: duration. Default: 30s.
	KeepAlive time.Duration

	// TLSHandshakeTimeout bounds the TLS handshake of one connection.
	// Unit: duration. Default: 5s.
	TLSHandshakeTimeout time.Duration

	// ResponseHeaderTimeout bounds the wait for the response headers after
	// the request has been written. Unit: duration. Default: 10s.
	ResponseHeaderTimeout time.Duration

	// ExpectContinueTimeout bounds the wait for a "100 Continue" when the
	// request carries "Expect: 100-continue". Unit: duration. Default: 1s.
	ExpectContinueTimeout time.Duration

	// MaxResponseHeaderBytes caps the size of the response headers.
	// Unit: bytes. Default: 1 MiB.
	MaxResponseHeaderBytes int64

	// RequestTimeout is the deadline of each attempt when the caller's
	// context has no deadline of its own. When the caller's context has a
	// deadline, that deadline applies and RequestTimeout is not used.
	// Unit: duration. Default: 15s.
	RequestTimeout time.Duration

	// MaxRetries is the maximum number of retries after the first attempt
	// (so at most MaxRetries+1 attempts). Unit: retries. Default: 3.
	// 0 disables retries; must be between 0 and 10.
	MaxRetries int

	// BackoffBase is the base of the exponential backoff: retry n (0-based)
	// sleeps a uniformly random duration in [0, min(BackoffCap,
	// BackoffBase*2^n)] ("full jitter"). Unit: duration. Default: 50ms.
	BackoffBase time.Duration

	// BackoffCap is the largest backoff sleep, and the largest Retry-After
	// the client honours: a response asking for a longer wait is returned
	// to the caller at once instead of being retried.
	// Unit: duration. Default: 2s. Must be >= BackoffBase.
	BackoffCap time.Duration

	// RetryOn500 makes 500 Internal Server Error retryable (429, 502, 503
	// and 504 always are). Default: false.
	RetryOn500 bool

	// RetryBudgetRatio is the share of extra load retries may add, per
	// upstream host, over RetryBudgetWindow: retries in the window are
	// allowed while retries < RetryBudgetRatio*requests +
	// RetryBudgetMinPerSecond*window. Unit: ratio in (0, 1]. Default: 0.1
	// (retries add at most 10% on top of the requests, plus the minimum).
	RetryBudgetRatio float64

	// RetryBudgetWindow is the sliding window of the retry budget.
	// Unit: duration. Default: 10s.
	RetryBudgetWindow time.Duration

	// RetryBudgetMinPerSecond is the retry allowance that exists regardless
	// of traffic, so that a quiet upstream can still be retried.
	// Unit: retries per second (averaged over RetryBudgetWindow).
	// Default: 10. 0 means no minimum; negative values are refused.
	RetryBudgetMinPerSecond int

	// BreakerWindow is the rolling window over which the circuit breaker of
	// an upstream counts successes and failures while closed.
	// Unit: duration. Default: 10s.
	BreakerWindow time.Duration

	// BreakerMinRequests is the number of completed requests in the window
	// below which the breaker never opens. Unit: requests. Default: 20.
	BreakerMinRequests int

	// BreakerFailureRatio opens the breaker when failures/completed requests
	// in the window reaches it (with at least BreakerMinRequests).
	// Unit: ratio in (0, 1]. Default: 0.5.
	BreakerFailureRatio float64

	// BreakerOpenTimeout is how long an open breaker fails fast before it
	// turns half-open and lets probe requests through.
	// Unit: duration. Default: 5s.
	BreakerOpenTimeout time.Duration

	// BreakerHalfOpenRequests is the number of probe requests let through
	// while half-open; that many consecutive successes close the breaker and
	// any failure opens it again. Unit: requests. Default: 1. Must be >= 1.
	BreakerHalfOpenRequests int

	// MaxResponseBytes caps the response body the client reads: Get and
	// GetJSON fail with ErrResponseTooLarge beyond it, and the body returned
	// by Do yields ErrResponseTooLarge once the cap is passed.
	// Unit: bytes. Default: 10 MiB.
	MaxResponseBytes int64

	// MaxDrainBytes caps how much of an unwanted or partially read response
	// body is read and discarded before closing it, so the connection can be
	// reused. Bodies longer than this are closed without draining (the
	// connection is then not reused). Unit: bytes. Default: 64 KiB.
	MaxDrainBytes int64

	// DrainTimeout bounds the time spent draining such a body; an upstream
	// that stalls mid-body is cut off (connection closed) when it expires,
	// so closing a body never blocks for long. Unit: duration. Default: 200ms.
	DrainTimeout time.Duration

	// MaxHosts caps the number of distinct upstream hosts (scheme://host:port)
	// that get their own metric label, circuit breaker and retry budget.
	// Further hosts share one entry labelled "other". This keeps metric
	// label cardinality and memory bounded. Unit: hosts. Default: 64.
	MaxHosts int

	// DisableKeepAlives opens a new TCP connection for every request. It
	// exists only for the keep-alive benchmark comparison; never set it in
	// production (keep-alive off is what held a GraphQL BFF at 720 req/s
	// instead of 3,600).
	// Default: false.
	DisableKeepAlives bool

	// UserAgent is sent on requests that do not set their own User-Agent.
	// Default: "incidentlib-outbound/1". Empty means Go's default.
	UserAgent string

	// RetryOn408 makes 408 Request Timeout retryable, like RetryOn500.
	// Default: false.
	RetryOn408 bool

	// DialContext, when set, makes every connection of the client in place
	// of a net.Dialer with DialTimeout and KeepAlive; the transport then
	// uses no proxy from the environment either, since a proxy would make
	// the connections in its place. An error from it whose Permanent()
	// method answers true is not retried (see Client.Do). The link checker
	// uses it to dial only addresses it has resolved and allowed.
	// Default: nil (the built-in dialer, HTTP(S)_PROXY honoured).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// NoRedirects hands every response to the caller as it came, a
	// redirect too: its Location is neither read nor followed (the link
	// checker follows redirects itself, checking each hop). Default: false
	// (redirects followed as http.Client does, at most 10).
	NoRedirects bool
}

// DefaultConfig returns the production defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		MaxConnsPerHost:         64,
		MaxIdleConnsPerHost:     64,
		MaxIdleConns:            512,
		IdleConnTimeout:         90 * time.Second,
		DialTimeout:             5 * time.Second,
		KeepAlive:               30 * time.Second,
		TLSHandshakeTimeout:     5 * time.Second,
		ResponseHeaderTimeout:   10 * time.Second,
		ExpectContinueTimeout:   1 * time.Second,
		MaxResponseHeaderBytes:  1 << 20,
		RequestTimeout:          15 * time.Second,
		MaxRetries:              3,
		BackoffBase:             50 * time.Millisecond,
		BackoffCap:              2 * time.Second,
		RetryOn500:              false,
		RetryBudgetRatio:        0.1,
		RetryBudgetWindow:       10 * time.Second,
		RetryBudgetMinPerSecond: 10,
		BreakerWindow:           10 * time.Second,
		BreakerMinRequests:      20,
		BreakerFailureRatio:     0.5,
		BreakerOpenTimeout:      5 * time.Second,
		BreakerHalfOpenRequests: 1,
		MaxResponseBytes:        10 << 20,
		MaxDrainBytes:           64 << 10,
		DrainTimeout:            200 * time.Millisecond,
		MaxHosts:                64,
		DisableKeepAlives:       false,
		UserAgent:               "incidentlib-outbound/1",
	}
}

// maxRetriesLimit is the largest MaxRetries Validate accepts.
const maxRetriesLimit = 10

// ConfigError reports one invalid Config field. Validate returns one or more
// of them (joined with errors.Join); use errors.As to inspect the first.
type ConfigError struct {
	// Field is the name of the offending Config field, e.g. "DialTimeout".
	Field string
	// Reason says what is wrong, including the unit of the field.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("outbound: invalid Config.%s: %s", e.Field, e.Reason)
}

// Validate refuses nonsensical values: zero or negative durations and sizes,
// ratios outside (0, 1], BackoffCap < BackoffBase, MaxIdleConnsPerHost >
// MaxConnsPerHost (when the latter is set), and so on. Every problem is
// reported as a *ConfigError naming the field and its unit; several problems
// are joined with errors.Join.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	posDur := func(field string, d time.Duration) {
		if d <= 0 {
			bad(field, "must be a positive duration, got %v", d)
		}
	}
	posInt := func(field, unit string, n int64) {
		if n <= 0 {
			bad(field, "must be a positive number of %s, got %d", unit, n)
		}
	}
	ratio := func(field string, r float64) {
		if !(r > 0 && r <= 1) || math.IsNaN(r) {
			bad(field, "must be a ratio in (0, 1], got %v", r)
		}
	}

	if c.MaxConnsPerHost < 0 {
		bad("MaxConnsPerHost", "must be >= 0 connections (0 = no limit), got %d", c.MaxConnsPerHost)
	}
	posInt("MaxIdleConnsPerHost", "connections", int64(c.MaxIdleConnsPerHost))
	if c.MaxConnsPerHost > 0 && c.MaxIdleConnsPerHost > c.MaxConnsPerHost {
		bad("MaxIdleConnsPerHost", "must be <= MaxConnsPerHost (%d connections), got %d connections",
			c.MaxConnsPerHost, c.MaxIdleConnsPerHost)
	}
	posInt("MaxIdleConns", "connections", int64(c.MaxIdleConns))
	if c.MaxIdleConns > 0 && c.MaxIdleConnsPerHost > 0 && c.MaxIdleConns < c.MaxIdleConnsPerHost {
		bad("MaxIdleConns", "must be >= MaxIdleConnsPerHost (%d connections), got %d connections",
			c.MaxIdleConnsPerHost, c.MaxIdleConns)
	}
	posDur("IdleConnTimeout", c.IdleConnTimeout)
	posDur("DialTimeout", c.DialTimeout)
	posDur("KeepAlive", c.KeepAlive)
	posDur("TLSHandshakeTimeout", c.TLSHandshakeTimeout)
	posDur("ResponseHeaderTimeout", c.ResponseHeaderTimeout)
	posDur("ExpectContinueTimeout", c.ExpectContinueTimeout)
	posInt("MaxResponseHeaderBytes", "bytes", c.MaxResponseHeaderBytes)
	posDur("RequestTimeout", c.RequestTimeout)
	if c.MaxRetries < 0 || c.MaxRetries > maxRetriesLimit {
		bad("MaxRetries", "must be between 0 and %d retries, got %d", maxRetriesLimit, c.MaxRetries)
	}
	posDur("BackoffBase", c.BackoffBase)
	posDur("BackoffCap", c.BackoffCap)
	if c.BackoffBase > 0 && c.BackoffCap > 0 && c.BackoffCap < c.BackoffBase {
		bad("BackoffCap", "must be >= BackoffBase (%v), got %v (duration)", c.BackoffBase, c.BackoffCap)
	}
	ratio("RetryBudgetRatio", c.RetryBudgetRatio)
	posDur("RetryBudgetWindow", c.RetryBudgetWindow)
	if c.RetryBudgetMinPerSecond < 0 {
		bad("RetryBudgetMinPerSecond", "must be >= 0 retries per second, got %d", c.RetryBudgetMinPerSecond)
	}
	posDur("BreakerWindow", c.BreakerWindow)
	posInt("BreakerMinRequests", "requests", int64(c.BreakerMinRequests))
	if int64(c.BreakerMinRequests) > math.MaxUint32 {
		bad("BreakerMinRequests", "must be <= %d requests, got %d", uint32(math.MaxUint32), c.BreakerMinRequests)
	}
	ratio("BreakerFailureRatio", c.BreakerFailureRatio)
	posDur("BreakerOpenTimeout", c.BreakerOpenTimeout)
	posInt("BreakerHalfOpenRequests", "requests", int64(c.BreakerHalfOpenRequests))
	if int64(c.BreakerHalfOpenRequests) > math.MaxUint32 {
		bad("BreakerHalfOpenRequests", "must be <= %d requests, got %d", uint32(math.MaxUint32), c.BreakerHalfOpenRequests)
	}
	posInt("MaxResponseBytes", "bytes", c.MaxResponseBytes)
	posInt("MaxDrainBytes", "bytes", c.MaxDrainBytes)
	posDur("DrainTimeout", c.DrainTimeout)
	posInt("MaxHosts", "hosts", int64(c.MaxHosts))
	return errors.Join(errs...)
}
