package gqledge

import (
	"crypto/sha256"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The whole-response cache keeps the exact bytes gqlgen wrote for a query,
// with their status and headers, and replays them for the same request.
//
// Key: the SHA-256 of the document's hash (the SHA-256 of its text, or the
// persisted-query hash it was sent by), the operation name, the variables
// (compacted JSON), the language the request resolves to (Accept-Language),
// and the request headers gqlgen or the middleware around it read to shape
// the response: Accept (the response's media type), Authorization and Origin.
//
// Invalidation is exact and needs no clock: an entry carries the store
// sequence read before its operation ran (every bbolt write transaction
// raises it), and a lookup serves an entry only while the store's sequence
// is still that value. A write therefore makes every older entry unusable at
// once; stale entries are dropped when met and age out of the LRU otherwise.
// The sequence is published after a write commits, so an entry's data are
// never older than its sequence: at worst a response computed while a write
// was publishing carries the older sequence, and is never served after it.
//
// Only queries that executed without errors and answered 200 are stored;
// mutations, errors and responses that set cookies never are. (A batch
// reaches the cache one operation at a time, from the guard in guard.go.)
//
// The request is read before gqlgen reads it (and given back to it
// unchanged); what a body or GET query string says is memoized by its exact
// bytes (memo), so a page's repeated requests are not decoded again.
//
// A hit is answered before the guard decodes the document (serveHit, called
// from the guard in guard.go once its HTTP checks have passed): see there
// why a request the guard would refuse is never answered from the cache.

const (
	// DefaultResponseCacheBytes is the response cache's default bound.
	DefaultResponseCacheBytes = 64 << 20
	// entryOverhead is what an entry costs beyond its body and headers:
	// the struct, the map slot and the list links, rounded up.
	entryOverhead = 256
	// maxCachedRequestBody is the largest request body whose response is
	// considered for caching; larger requests pass through untouched.
	maxCachedRequestBody = 64 << 10
)

// Cache outcomes, as logged and as the outcome label of
// incidentlib_response_cache_requests_total.
const (
	cacheHit    = "hit"    // served from the cache
	cacheMiss   = "miss"   // not in the cache: executed
	cacheStale  = "stale"  // in the cache from an older store sequence: executed
	cacheBypass = "bypass" // not a request the cache reads: not a GET or JSON POST, malformed, over 64 KiB, or without a document; or the server's reads are stale (stale.go)
	cacheOff    = "off"    // the cache is turned off
)

// cacheKey identifies one response.
type cacheKey [sha256.Size]byte

// cachedResponse is one stored response.
type cachedResponse struct {
	key    cacheKey
	seq    uint64
	status int
	header http.Header
	body   []byte
	op     string // operation name, for logs and metrics on a hit
	cost   any    // the operation's cost, when known, for logs on a hit
	size   int64
	born   int64 // Unix nanoseconds, when entries also expire by age (upstream data)

	// Computed once, when the entry is made, for every replay: the ETag,
	// the Content-Length header, the cost as logged and the request
	// duration histogram of a hit on it.
	etag          string
	contentLength []string
	costText      string
	hitDuration   prometheus.Observer

	prev, next *cachedResponse
}

// respCache is an LRU of responses bounded in bytes.
type respCache struct {
	max int64

	mu    sync.Mutex
	size  int64
	items map[cacheKey]*cachedResponse
	root  cachedResponse // sentinel: root.next is the most recently used

	requests  *prometheus.CounterVec
	outcomes  map[string]prometheus.Counter // requests by outcome, resolved once
	evictions *prometheus.CounterVec
	stores    prometheus.Counter
}

func newRespCache(max int64, reg prometheus.Registerer) (*respCache, error) {
	c := &respCache{
		max:   max,
		items: map[cacheKey]*cachedResponse{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_response_cache_requests_total",
			Help: "GraphQL requests by response cache outcome: hit, miss, stale (an entry from an older store sequence), bypass (not cacheable by shape), off.",
		}, []string{"outcome"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentlib_response_cache_evictions_total",
			Help: "Responses dropped from the cache: size (least recently used, to stay within the bound) or stale (a write made them unusable).",
		}, []string{"reason"}),
		stores: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentlib_response_cache_stores_total",
			Help: "Responses stored in the cache.",
		}),
	}
	c.root.prev, c.root.next = &c.root, &c.root
	c.outcomes = map[string]prometheus.Counter{}
	for _, o := range []string{cacheHit, cacheMiss, cacheStale, cacheBypass, cacheOff} {
		c.outcomes[o] = c.requests.WithLabelValues(o)
	}
	c.evictions.WithLabelValues("size")
	c.evictions.WithLabelValues("stale")
	cs := []prometheus.Collector{c.requests, c.evictions, c.stores,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "incidentlib_response_cache_bytes",
			Help: "Bytes held by the response cache (bodies, headers and per-entry overhead).",
		}, func() float64 { c.mu.Lock(); defer c.mu.Unlock(); return float64(c.size) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "incidentlib_response_cache_entries",
			Help: "Responses held by the response cache.",
		}, func() float64 { c.mu.Lock(); defer c.mu.Unlock(); return float64(len(c.items)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "incidentlib_response_cache_max_bytes",
			Help: "The response cache's bound in bytes (--response-cache-size); 0 when it is off.",
		}, func() float64 { return float64(c.max) }),
	}
	for _, col := range cs {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *respCache) enabled() bool { return c.max > 0 }

// get returns the entry for key if it was computed at the store sequence
// seq (and, when bornAfter is not 0, not before it), and the outcome.
func (c *respCache) get(key cacheKey, seq uint64, bornAfter int64) (*cachedResponse, string) {
	c.mu.Lock()
	e := c.items[key]
	switch {
	case e == nil:
		c.mu.Unlock()
		return nil, cacheMiss
	case e.seq != seq || e.born < bornAfter:
		c.remove(e)
		c.mu.Unlock()
		c.evictions.WithLabelValues("stale").Inc()
		return nil, cacheStale
	}
	c.unlink(e)
	c.pushFront(e)
	c.mu.Unlock()
	return e, cacheHit
}

// peek returns the entry for key only if it is usable (as get would serve
// it), marking it recently used; it changes nothing else and counts
// nothing, so that a caller that finds no usable entry can go the usual way
// (get, which counts the outcome and drops a stale entry).
func (c *respCache) peek(key cacheKey, seq uint64, bornAfter int64) *cachedResponse {
	c.mu.Lock()
	e := c.items[key]
	if e == nil || e.seq != seq || e.born < bornAfter {
		c.mu.Unlock()
		return nil
	}
	c.unlink(e)
	c.pushFront(e)
	c.mu.Unlock()
	return e
}

// put stores e unless a write has made it stale already (seq is the store's
// sequence now) or it alone exceeds the bound.
func (c *respCache) put(e *cachedResponse, seq uint64) {
	if e.seq != seq || e.size > c.max {
		return
	}
	var evicted int
	c.mu.Lock()
	if old := c.items[e.key]; old != nil {
		c.remove(old)
	}
	c.items[e.key] = e
	c.pushFront(e)
	c.size += e.size
	for c.size > c.max && c.root.prev != &c.root {
		c.remove(c.root.prev)
		evicted++
	}
	c.mu.Unlock()
	c.stores.Inc()
	if evicted > 0 {
		c.evictions.WithLabelValues("size").Add(float64(evicted))
	}
}

func (c *respCache) remove(e *cachedResponse) {
	c.unlink(e)
	delete(c.items, e.key)
	c.size -= e.size
}

func (c *respCache) unlink(e *cachedResponse) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *respCache) pushFront(e *cachedResponse) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}
