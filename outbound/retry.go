package outbound

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// IdempotencyKeyHeader is the request header that makes a POST retryable:
// the upstream promises to apply a request with a given key at most once.
const IdempotencyKeyHeader = "Idempotency-Key"

// isIdempotent reports whether the request may be sent more than once:
// GET, HEAD, OPTIONS, PUT and DELETE always, POST only with an
// Idempotency-Key header.
func isIdempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPost:
		return req.Header.Get(IdempotencyKeyHeader) != ""
	default:
		return false
	}
}

// hasBody reports whether the request carries a body that must be sent.
func hasBody(req *http.Request) bool {
	return req.Body != nil && req.Body != http.NoBody
}

// bodyReplayable reports whether the request body can be sent again: either
// there is no body or req.GetBody can produce a fresh copy.
func bodyReplayable(req *http.Request) bool {
	return !hasBody(req) || req.GetBody != nil
}

// retryableStatus reports whether an HTTP status is worth retrying, and the
// bounded reason label used in metrics.
func retryableStatus(code int, retryOn500 bool) (string, bool) {
	switch code {
	case http.StatusTooManyRequests:
		return "status_429", true
	case http.StatusBadGateway:
		return "status_502", true
	case http.StatusServiceUnavailable:
		return "status_503", true
	case http.StatusGatewayTimeout:
		return "status_504", true
	case http.StatusInternalServerError:
		return "status_500", retryOn500
	}
	return "", false
}

// fullJitter returns a random duration in [0, min(cap, base*2^retry)]
// ("full jitter" exponential backoff). retry is 0 for the first retry.
func fullJitter(base, cap time.Duration, retry int) time.Duration {
	ceil := cap
	if retry < 62 && base <= cap>>uint(retry) {
		ceil = base << uint(retry)
	}
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// parseRetryAfter parses a Retry-After header value, either delay-seconds or
// an HTTP date. ok is false when the header is absent or malformed. A date in
// the past yields 0.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// All digits but does not fit in int64: absurdly long.
			if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
				return time.Duration(1<<63 - 1), true
			}
			return 0, false
		}
		if secs > int64((1<<63-1)/time.Second) {
			return time.Duration(1<<63 - 1), true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	if d < 0 {
		d = 0
	}
	return d, true
}

// sleepCtx sleeps for d or until ctx is done, whichever comes first, and
// returns ctx.Err() in the latter case.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryBudget limits retries to a share of the requests over a sliding
// window, plus a fixed minimum, so that retries cannot multiply the load on
// an upstream that is already failing. It keeps budgetBuckets buckets.
type retryBudget struct {
	ratio     float64
	minRetry  float64 // minimum allowance per window (min per second * window)
	bucketDur time.Duration

	mu      sync.Mutex
	buckets [budgetBuckets]budgetBucket
}

const budgetBuckets = 10

type budgetBucket struct {
	epoch    int64 // bucket number since the Unix epoch; stale if too old
	requests int64
	retries  int64
}

func newRetryBudget(ratio float64, window time.Duration, minPerSecond int) *retryBudget {
	bd := window / budgetBuckets
	if bd <= 0 {
		bd = 1
	}
	return &retryBudget{
		ratio:     ratio,
		minRetry:  float64(minPerSecond) * window.Seconds(),
		bucketDur: bd,
	}
}

// bucket returns the current bucket, resetting it if it is stale. b.mu held.
func (b *retryBudget) bucket(now time.Time) *budgetBucket {
	epoch := now.UnixNano() / int64(b.bucketDur)
	bk := &b.buckets[epoch%budgetBuckets]
	if bk.epoch != epoch {
		*bk = budgetBucket{epoch: epoch}
	}
	return bk
}

// onRequest records one new (first-attempt) request.
func (b *retryBudget) onRequest(now time.Time) {
	b.mu.Lock()
	b.bucket(now).requests++
	b.mu.Unlock()
}

// tryRetry reports whether one more retry fits in the budget, and if so
// records it.
func (b *retryBudget) tryRetry(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.bucket(now)
	var requests, retries int64
	for i := range b.buckets {
		bk := &b.buckets[i]
		if bk.epoch > cur.epoch-budgetBuckets && bk.epoch <= cur.epoch {
			requests += bk.requests
			retries += bk.retries
		}
	}
	if float64(retries) >= b.ratio*float64(requests)+b.minRetry {
		return false
	}
	cur.retries++
	return true
}
