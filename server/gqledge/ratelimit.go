package gqledge

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/incidentlib/incidentlib"
)

// RateLimit limits each client's query cost per second with a token
// bucket. A client is the name of its token once the edge verified it
// (Options.Authenticate), else its IP address (its /64 network for IPv6),
// read from TrustedProxyHeader when that is set and present, else from
// the connection. A token that is not verified never names a client: a
// client that rotates made-up tokens is refused (401) and, were it not,
// would still be counted by its address.
type RateLimit struct {
	// CostPerSecond is the refill rate; 0 turns rate limiting off.
	CostPerSecond float64
	// Burst is the bucket's size, in cost; 0 means Limits.MaxCost. It may
	// not be less than MaxCost, or a request at the cost limit could never
	// pass.
	Burst int
	// TrustedProxyHeader names the header a trusted reverse proxy sets to
	// the client's address (X-Forwarded-For: its last entry, the one the
	// proxy added; X-Real-IP). Empty: the connection's address. Set it only
	// behind such a proxy: any client can send the header.
	TrustedProxyHeader string
	// Clients is how many clients' buckets are kept, least recently seen
	// dropped first; 0 means DefaultRateClients.
	Clients int
}

// DefaultRateClients bounds the rate limiter's memory: about 100 bytes
// per client.
const DefaultRateClients = 100_000

type bucket struct {
	tokens float64
	last   time.Time
}

type rateLimiter struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	buckets *simplelru.LRU[string, *bucket]
}

func newRateLimiter(c RateLimit, maxCost int) (*rateLimiter, error) {
	if c.TrustedProxyHeader != "" && !validHeaderName(c.TrustedProxyHeader) {
		return nil, fmt.Errorf("the trusted proxy header %q is not a header name", c.TrustedProxyHeader)
	}
	switch {
	case math.IsNaN(c.CostPerSecond) || c.CostPerSecond < 0 || math.IsInf(c.CostPerSecond, 0):
		return nil, fmt.Errorf("the rate limit must be a cost per second of 0 (off) or more, got %v", c.CostPerSecond)
	case c.Burst < 0 || c.Clients < 0:
		return nil, errors.New("the rate burst and the number of clients must not be negative")
	}
	burst := c.Burst
	if burst == 0 {
		burst = maxCost
	}
	if burst < maxCost {
		return nil, fmt.Errorf("the rate burst (%d) must be at least the cost limit (%d), or a request at the cost limit could never pass", burst, maxCost)
	}
	if c.CostPerSecond == 0 {
		return nil, nil
	}
	clients := c.Clients
	if clients == 0 {
		clients = DefaultRateClients
	}
	lru, err := simplelru.NewLRU[string, *bucket](clients, nil)
	if err != nil {
		return nil, err
	}
	return &rateLimiter{rate: c.CostPerSecond, burst: float64(burst), now: time.Now, buckets: lru}, nil
}

// fill returns key's bucket, refilled to now. l.mu is held.
func (l *rateLimiter) fill(key string) *bucket {
	now := l.now()
	b, ok := l.buckets.Get(key)
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets.Add(key, b)
		return b
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.last = now
	}
	return b
}

// admits says whether key may send a request at all (it has at least 1
// left), and if not, when it may. It charges nothing.
func (l *rateLimiter) admits(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.fill(key)
	if b.tokens >= 1 {
		return true, 0
	}
	return false, l.wait(1 - b.tokens)
}

// take charges key cost if it has that much left; a refused request is not
// charged.
func (l *rateLimiter) take(key string, cost int) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.fill(key)
	if b.tokens >= float64(cost) {
		b.tokens -= float64(cost)
		return true, 0
	}
	return false, l.wait(float64(cost) - b.tokens)
}

func (l *rateLimiter) wait(missing float64) time.Duration {
	return time.Duration(missing / l.rate * float64(time.Second))
}

// retryAfter is the Retry-After header's value: whole seconds, at least 1.
func retryAfter(d time.Duration) string { return strconv.Itoa(retrySeconds(d)) }

func retrySeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	return max(1, s)
}

// clientKey names the client of r for the rate limiter.
func clientKey(r *http.Request, proxyHeader string) string {
	if id, ok := incidentlib.IdentityFrom(r.Context()); ok && id.Name != "" {
		return "token:" + id.Name
	}
	if proxyHeader != "" {
		if vs := r.Header.Values(proxyHeader); len(vs) > 0 {
			last := vs[len(vs)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if a, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
				return ipKey(a)
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return ipKey(a)
	}
	return "addr:" + host
}

func ipKey(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return "ip:" + p.String()
	}
	return "ip:" + a.String()
}

// ValidateHeaderName checks a header name such as X-Forwarded-For.
func ValidateHeaderName(s string) error {
	if !validHeaderName(s) {
		return fmt.Errorf("%q is not a header name such as X-Forwarded-For", s)
	}
	return nil
}

func validHeaderName(s string) bool {
	for _, c := range s {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s != ""
}
