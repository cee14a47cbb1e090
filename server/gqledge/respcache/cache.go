// Package respcache is the GraphQL edge's whole-response cache: an LRU of
// responses bounded in bytes and invalidated by the store's sequence
// (cache.go), and the HTTP caching of the responses it replays: ETags,
// If-None-Match, Cache-Control and Vary (httpcache.go). It knows nothing of
// GraphQL or of the edge's request state: server/gqledge decides which
// requests it reads, computes their keys, captures a miss's response
// (Capture), and stores and replays it (gqledge's caching.go and
// download.go).
package respcache

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
// bytes (gqledge's memo), so a page's repeated requests are not decoded
// again.
//
// A hit is answered before the guard decodes the document (gqledge's
// serveHit, called from the guard in guard.go once its HTTP checks have
// passed): see there why a request the guard would refuse is never
// answered from the cache.

// EntryOverhead is what an entry costs beyond its body and headers: the
// struct, the map slot and the list links, rounded up.
const EntryOverhead = 256

// Cache outcomes, as logged and as the outcome label of
// incidentlib_response_cache_requests_total.
const (
	Hit    = "hit"    // served from the cache
	Miss   = "miss"   // not in the cache: executed
	Stale  = "stale"  // in the cache from an older store sequence: executed
	Bypass = "bypass" // not a request the cache reads: not a GET or JSON POST, malformed, over 64 KiB, or without a document; or the server's reads are stale (gqledge's stale.go)
	Off    = "off"    // the cache is turned off
)

// Key identifies one response.
type Key [sha256.Size]byte

// Entry is one stored response.
type Entry struct {
	Key    Key
	Seq    uint64 // the store sequence read before the response was computed
	Status int
	Header http.Header
	Body   []byte
	Op     string // operation name, for logs and metrics on a hit
	Cost   any    // the operation's cost, when known, for logs on a hit
	Size   int64  // what the entry holds against the bound (Measure)
	Born   int64  // Unix nanoseconds, when entries also expire by age (upstream data)

	// Computed once, when the entry is made, for every replay: the ETag,
	// the Content-Length header, the cost as logged and the request
	// duration histogram of a hit on it.
	ETag          string
	ContentLength []string
	CostText      string
	HitDuration   prometheus.Observer

	prev, next *Entry
}

// Measure sets e.Size from its body and headers.
func (e *Entry) Measure() {
	e.Size = int64(len(e.Body)) + HeaderSize(e.Header) + EntryOverhead
}

// HeaderSize is what h costs an entry, in bytes.
func HeaderSize(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// Cache is an LRU of responses bounded in bytes.
type Cache struct {
	max int64

	mu    sync.Mutex
	size  int64
	items map[Key]*Entry
	root  Entry // sentinel: root.next is the most recently used

	requests  *prometheus.CounterVec
	outcomes  map[string]prometheus.Counter // requests by outcome, resolved once
	evictions *prometheus.CounterVec
	stores    prometheus.Counter
}

// New makes a cache of at most max bytes (0: off, every lookup misses and
// nothing is stored) and registers its metrics on reg.
func New(max int64, reg prometheus.Registerer) (*Cache, error) {
	c := &Cache{
		max:   max,
		items: map[Key]*Entry{},
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
	for _, o := range []string{Hit, Miss, Stale, Bypass, Off} {
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

// Enabled says whether the cache keeps anything.
func (c *Cache) Enabled() bool { return c.max > 0 }

// Max is the cache's bound in bytes.
func (c *Cache) Max() int64 { return c.max }

// Count counts a request with outcome (Hit, Miss, Stale, Bypass or Off).
func (c *Cache) Count(outcome string) { c.outcomes[outcome].Inc() }

// Get returns the entry for key if it was computed at the store sequence
// seq (and, when bornAfter is not 0, not before it), and the outcome.
func (c *Cache) Get(key Key, seq uint64, bornAfter int64) (*Entry, string) {
	c.mu.Lock()
	e := c.items[key]
	switch {
	case e == nil:
		c.mu.Unlock()
		return nil, Miss
	case e.Seq != seq || e.Born < bornAfter:
		c.remove(e)
		c.mu.Unlock()
		c.evictions.WithLabelValues("stale").Inc()
		return nil, Stale
	}
	c.unlink(e)
	c.pushFront(e)
	c.mu.Unlock()
	return e, Hit
}

// Peek returns the entry for key only if it is usable (as Get would serve
// it), marking it recently used; it changes nothing else and counts
// nothing, so that a caller that finds no usable entry can go the usual way
// (Get, which counts the outcome and drops a stale entry).
func (c *Cache) Peek(key Key, seq uint64, bornAfter int64) *Entry {
	c.mu.Lock()
	e := c.items[key]
	if e == nil || e.Seq != seq || e.Born < bornAfter {
		c.mu.Unlock()
		return nil
	}
	c.unlink(e)
	c.pushFront(e)
	c.mu.Unlock()
	return e
}

// Put stores e unless a write has made it stale already (seq is the store's
// sequence now) or it alone exceeds the bound.
func (c *Cache) Put(e *Entry, seq uint64) {
	if e.Seq != seq || e.Size > c.max {
		return
	}
	var evicted int
	c.mu.Lock()
	if old := c.items[e.Key]; old != nil {
		c.remove(old)
	}
	c.items[e.Key] = e
	c.pushFront(e)
	c.size += e.Size
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

func (c *Cache) remove(e *Entry) {
	c.unlink(e)
	delete(c.items, e.Key)
	c.size -= e.Size
}

func (c *Cache) unlink(e *Entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *Cache) pushFront(e *Entry) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}
