package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
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
// reaches the cache one operation at a time, from the guard in limits.go.)
//
// The request is read before gqlgen reads it (and given back to it
// unchanged); what a body or GET query string says is memoized by its exact
// bytes (memo), so a page's repeated requests are not decoded again.
//
// A hit is answered before the guard decodes the document (serveHit, called
// from the guard in limits.go once its HTTP checks have passed): see there
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
	cacheBypass = "bypass" // not a request the cache reads: not a GET or JSON POST, malformed, over 64 KiB, or without a document
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

// gqlRequest is what the cache reads of a GraphQL request before gqlgen.
type gqlRequest struct {
	docHash   string // hex SHA-256 of the document text, or the persisted hash sent (logged)
	keyHash   string // the document hash of the key: docHash, or with trusted documents the SHA-256 of the document an id names
	query     string // the document text when sent (its first bytes only, from the memo)
	persisted bool   // sent by persisted hash only, without the text
	op        string
	vars      []byte // compacted JSON, empty for none
}

type persistedQueryExt struct {
	Version    int    `json:"version"`
	Sha256Hash string `json:"sha256Hash"`
}

type postBody struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    struct {
		PersistedQuery *persistedQueryExt `json:"persistedQuery"`
	} `json:"extensions"`
}

// readGraphQLRequest reads the document, operation and variables of a GET
// or a JSON POST, restoring the body for gqlgen. ok is false for anything
// the cache does not consider (other methods and media types, batches,
// malformed JSON, large bodies, a persisted-query extension gqlgen would
// refuse or that names another document than the text sent, an id that is
// not a trusted document); gqlgen then answers as it would.
func (o *ops) readGraphQLRequest(r *http.Request) (req gqlRequest, ok bool) {
	var pb postBody
	switch r.Method {
	case http.MethodGet:
		if req, ok := o.getMemo.get(r.URL.RawQuery); ok {
			return req, true
		}
		defer func() {
			if ok {
				o.getMemo.put(r.URL.RawQuery, req.memoized())
			}
		}()
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return req, false
		}
		pb.Query, pb.OperationName = q.Get("query"), q.Get("operationName")
		if v := q.Get("variables"); v != "" {
			pb.Variables = json.RawMessage(v)
		}
		if ext := q.Get("extensions"); ext != "" {
			if json.Unmarshal([]byte(ext), &pb.Extensions) != nil {
				return req, false
			}
		}
	case http.MethodPost:
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" || r.Body == nil {
			return req, false
		}
		body, err := readRequestBody(r)
		restoreBody(r, body, err)
		if err != nil || len(body) > maxCachedRequestBody {
			return req, false
		}
		if req, ok := o.postMemo.getBytes(body); ok {
			return req, true
		}
		defer func() {
			if ok {
				o.postMemo.put(string(body), req.memoized())
			}
		}()
		if json.Unmarshal(body, &pb) != nil {
			return req, false // a batch (an array) or malformed: gqlgen answers
		}
	default:
		return req, false
	}
	return o.parseRequest(&pb)
}

// parseRequest makes the cache's reading of a decoded request.
func (o *ops) parseRequest(pb *postBody) (req gqlRequest, ok bool) {
	req.query, req.op = pb.Query, pb.OperationName
	pq := pb.Extensions.PersistedQuery
	if pq != nil && (pq.Sha256Hash == "" || (o.trusted == nil && pq.Version != 1)) {
		return req, false // APQ refuses it (the trusted documents read the id only); gqlgen answers
	}
	switch {
	case pb.Query != "":
		sum := sha256.Sum256([]byte(pb.Query))
		req.docHash = hex.EncodeToString(sum[:])
		// Text and id together: APQ registers the text under the id only
		// if the id is its hash, the trusted documents accept it only if
		// the id names that text; anything else is refused there, and
		// must not be answered from an entry of the text.
		if pq != nil && !o.sameDocument(pq.Sha256Hash, pb.Query, req.docHash) {
			return req, false
		}
	case pq != nil:
		req.docHash = pq.Sha256Hash
		req.persisted = true
	default:
		return req, false
	}
	req.keyHash = req.docHash
	if o.trusted != nil {
		if req.keyHash, ok = o.trusted.canonicalHash(req); !ok {
			return req, false // an unknown id: PERSISTED_QUERY_NOT_FOUND
		}
	}
	if v := bytes.TrimSpace(pb.Variables); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
		var buf bytes.Buffer
		if json.Compact(&buf, v) != nil {
			return req, false
		}
		req.vars = buf.Bytes()
	}
	return req, true
}

// memo remembers what recent request bodies (or GET query strings) say,
// so that the requests a page sends again and again are not decoded again:
// the raw bytes are the map key, so a hit is exactly the same request.
// Bounded in entries and in the size of what it keeps; emptied when full.
//
// The response cache keeps one per method (getMemo, postMemo: document
// hash, operation, variables) for requests that reached it, which is to
// say requests whose HTTP form the guard accepted (the guard is the only
// way to the cache; limits.go); the POST transport keeps the parameters it
// decodes (Server.params).
type memo[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

const (
	memoEntries  = 2048
	memoMaxBytes = 4 << 10 // larger requests are decoded every time
)

func (m *memo[V]) get(raw string) (v V, ok bool) {
	if len(raw) > memoMaxBytes {
		return v, false
	}
	m.mu.RLock()
	v, ok = m.m[raw]
	m.mu.RUnlock()
	return v, ok
}

func (m *memo[V]) getBytes(raw []byte) (v V, ok bool) {
	if len(raw) > memoMaxBytes {
		return v, false
	}
	m.mu.RLock()
	v, ok = m.m[string(raw)] // no copy: the compiler converts in place for a lookup
	m.mu.RUnlock()
	return v, ok
}

func (m *memo[V]) put(raw string, v V) {
	if len(raw) > memoMaxBytes {
		return
	}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= memoEntries {
		m.m = make(map[string]V, 64)
	}
	m.m[raw] = v
	m.mu.Unlock()
}

// memoized is req as a memo keeps it: the document's text only as far as
// debug logs show it (the hash says which document).
func (req gqlRequest) memoized() gqlRequest {
	req.query = truncate(req.query, logPrefixBytes)
	return req
}

// readRequestBody reads up to maxCachedRequestBody+1 bytes of the body,
// in one allocation when the length is known. On error it returns what it
// read.
func readRequestBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= maxCachedRequestBody {
		body := make([]byte, n)
		k, err := io.ReadFull(r.Body, body)
		return body[:k], err
	}
	return io.ReadAll(io.LimitReader(r.Body, maxCachedRequestBody+1))
}

// restoreBody gives gqlgen the body the cache read: the same bytes, then
// the same error if reading failed (a body size limit, a broken client).
func restoreBody(r *http.Request, body []byte, err error) {
	rest := r.Body
	if err == nil && r.ContentLength == int64(len(body)) {
		r.Body = struct {
			io.Reader
			io.Closer
		}{bytes.NewReader(body), rest}
		return
	}
	var tail io.Reader = rest
	if err != nil {
		tail = errReader{err}
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), tail), rest}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// sameDocument says whether a persisted id sent with a document's text
// names that text: with trusted documents, the id's document is the text;
// otherwise (APQ), the id is the text's hash.
func (o *ops) sameDocument(id, query, queryHash string) bool {
	if o.trusted != nil {
		doc, ok := o.trusted.byID[id]
		return ok && doc == query
	}
	return id == queryHash
}

// key computes the cache key of a request: the SHA-256 of its parts, each
// ended by a zero byte (none of them holds one: hex, JSON, header values).
func (req *gqlRequest) key(r *http.Request, lang incidentlib.Lang) cacheKey {
	var arr [512]byte
	b := arr[:0]
	for _, part := range [...]string{req.keyHash, req.op, string(req.vars), string(lang),
		r.Header.Get("Accept"), r.Header.Get("Authorization"), r.Header.Get("Origin")} {
		b = append(b, part...)
		b = append(b, 0)
	}
	return sha256.Sum256(b)
}

// requestLang is the language a request resolves to, as withLang decides.
func requestLang(r *http.Request) incidentlib.Lang {
	if h := r.Header.Get("Accept-Language"); h != "" {
		return ParseAcceptLanguage(h)
	}
	return incidentlib.LangEn
}

// captureWriter buffers what gqlgen writes, so that it can be stored and
// replayed, and so that headers (ETag) can be added after the fact.
type captureWriter struct {
	header http.Header
	status int
	body   *bytes.Buffer // pooled (graph.PooledBuffer)
}

func (c *captureWriter) Header() http.Header { return c.header }
func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}

// perRequestHeaders are never stored with a response: they describe one
// exchange, not the response (Content-Length is set again on replay).
var perRequestHeaders = []string{"Date", "Content-Length", "X-Request-Id", "Retry-After"}

// cachingHandler wraps the GraphQL handler with the response cache and
// HTTP caching.
func (o *ops) cachingHandler(next http.Handler) http.Handler {
	return &cachingHandler{o: o, next: next}
}

type cachingHandler struct {
	o    *ops
	next http.Handler
}

// freshness says, for a lookup now, which entries are too old and whether a
// new one may be stored. Data from an upstream library are not covered by
// the store's sequence: with an upstream, entries also expire after maxAge,
// and are not kept at all without one.
func (o *ops) freshness() (now, bornAfter int64, store bool) {
	if o.upstream != nil && o.upstream() {
		now = time.Now().UnixNano()
		return now, now - int64(o.maxAge), o.maxAge > 0
	}
	return 0, 0, true
}

// serveHit answers r from the cache if raw (the POST body; nil for a GET,
// whose query string is read) is a request the cache has read before and
// its response is stored and current. It writes nothing and counts nothing
// otherwise: the request then goes the usual way, through the guard's
// document checks and ServeHTTP. The guard calls it once its HTTP checks
// have passed (limits.go, graphqlHTTP, says why that is enough).
func (h *cachingHandler) serveHit(w http.ResponseWriter, r *http.Request, raw []byte) bool {
	o := h.o
	if !o.cache.enabled() {
		return false
	}
	var req gqlRequest
	var ok bool
	get := r.Method == http.MethodGet
	if get {
		req, ok = o.getMemo.get(r.URL.RawQuery)
	} else {
		req, ok = o.postMemo.getBytes(raw)
	}
	if !ok {
		return false
	}
	_, bornAfter, _ := o.freshness()
	e := o.cache.peek(req.key(r, requestLang(r)), o.db.Seq(), bornAfter)
	if e == nil {
		return false
	}
	o.cache.outcomes[cacheHit].Inc()
	if st := stateOf(r.Context()); st != nil {
		st.cache, st.docHash = cacheHit, req.docHash
		st.noteHit(e)
		if st.debug && req.query != "" {
			st.queryPrefix = truncate(req.query, logPrefixBytes)
			st.varsPrefix = truncate(string(req.vars), logPrefixBytes)
		}
	}
	o.replay(w, r, e, get)
	return true
}

func (h *cachingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o, next := h.o, h.next
	st := stateOf(r.Context())
	if st == nil { // not behind requestLog
		st = &reqState{}
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	}
	req, ok := o.readGraphQLRequest(r)
	if !ok {
		st.cache = cacheBypass
		o.cache.outcomes[cacheBypass].Inc()
		next.ServeHTTP(w, r)
		return
	}
	st.op, st.docHash = req.op, req.docHash
	if st.debug && req.query != "" {
		st.queryPrefix = truncate(req.query, logPrefixBytes)
		st.varsPrefix = truncate(string(req.vars), logPrefixBytes)
	}
	key := req.key(r, requestLang(r))
	seq := o.db.Seq()
	get := r.Method == http.MethodGet
	now, bornAfter, store := o.freshness()
	if o.cache.enabled() {
		e, outcome := o.cache.get(key, seq, bornAfter)
		st.cache = outcome
		o.cache.outcomes[outcome].Inc()
		if e != nil {
			st.noteHit(e)
			o.replay(w, r, e, get)
			return
		}
	} else {
		st.cache = cacheOff
		o.cache.outcomes[cacheOff].Inc()
	}

	st.slot = &cacheSlot{}
	cw := &captureWriter{header: http.Header{}, body: graph.PooledBuffer()}
	defer graph.PutBuffer(cw.body) // written by then, and a stored body is a copy
	next.ServeHTTP(cw, r)
	slot := st.slot
	st.slot = nil
	if slot.op != "" {
		st.op = slot.op
	}
	st.cost = slot.cost
	status := cw.status
	if status == 0 {
		status = http.StatusOK
	}
	cacheable := slot.executed && !slot.noStore && status == http.StatusOK && cw.header.Get("Set-Cookie") == ""
	if !cacheable {
		copyHeader(w.Header(), cw.header)
		if get {
			w.Header().Set("Cache-Control", "no-store")
		}
		w.WriteHeader(status)
		_, _ = w.Write(cw.body.Bytes())
		return
	}
	hdr := cw.header.Clone()
	for _, h := range perRequestHeaders {
		hdr.Del(h)
	}
	e := &cachedResponse{
		key: key, seq: seq, status: status, header: hdr, body: cw.body.Bytes(),
		op: slot.op, cost: slot.cost, born: now,
	}
	e.size = int64(len(e.body)) + headerSize(hdr) + entryOverhead
	o.finish(e)
	if o.cache.enabled() && store {
		e.body = bytes.Clone(e.body) // the capture's buffer goes back to the pool
		e.hitDuration = o.reqMetrics.duration.WithLabelValues(o.m.operationLabel(e.op), cacheHit)
		o.cache.put(e, o.db.Seq())
	}
	o.replay(w, r, e, get)
}

// finish computes what every replay of e writes or logs the same.
func (o *ops) finish(e *cachedResponse) {
	e.etag = o.etag(e)
	e.contentLength = []string{strconv.Itoa(len(e.body))}
	if e.cost != nil {
		e.costText = truncate(costString(e.cost), 32)
	}
}

// replay writes a stored (or just computed, cacheable) response: the same
// status, headers and bytes, with HTTP caching headers on GET.
func (o *ops) replay(w http.ResponseWriter, r *http.Request, e *cachedResponse, get bool) {
	h := w.Header()
	copyHeader(h, e.header)
	if get {
		o.setCacheHeaders(h, e.etag)
		if etagMatch(r.Header.Get("If-None-Match"), e.etag) {
			h.Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h["Content-Length"] = e.contentLength
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

func headerSize(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// cacheSlot is what the GraphQL side reports to the cache about one
// execution.
type cacheSlot struct {
	executed bool   // the operation ran (parse, validation and persisted-query errors never do)
	noStore  bool   // not a query, or the response has errors
	op       string // the operation's name
	cost     any    // extensions.cost or the complexity, when known
}

// cacheSignal is the gqlgen extension that fills the request's cacheSlot.
type cacheSignal struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = cacheSignal{}

func (cacheSignal) ExtensionName() string                   { return "ResponseCacheSignal" }
func (cacheSignal) Validate(graphql.ExecutableSchema) error { return nil }

func (cacheSignal) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	st := stateOf(ctx)
	if st == nil || !graphql.HasOperationContext(ctx) {
		return resp
	}
	oc := graphql.GetOperationContext(ctx)
	name := OperationName(oc)
	var cost any
	if resp != nil {
		cost = resp.Extensions["cost"]
	}
	if cost == nil {
		if cs := extension.GetComplexityStats(ctx); cs != nil {
			cost = cs.Complexity
		}
	}
	st.op, st.cost = name, cost
	slot := st.slot
	if slot == nil {
		return resp
	}
	slot.executed, slot.op, slot.cost = true, name, cost
	if oc.Operation == nil || oc.Operation.Operation != ast.Query || resp == nil || len(resp.Errors) > 0 {
		slot.noStore = true
	}
	return resp
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// ops holds the HTTP-edge features: the response cache, HTTP caching,
// persisted queries and trusted documents, and request logging.
type ops struct {
	db           dbSeq
	m            *Metrics
	cache        *respCache
	trusted      *TrustedDocuments
	epoch        string
	cacheControl string
	logger       *slog.Logger
	logRequests  bool
	reqMetrics   *requestMetrics
	upstream     func() bool   // an upstream library is configured
	maxAge       time.Duration // how long entries live when it is

	getMemo, postMemo memo[gqlRequest] // what GET query strings and POST bodies say
}

// dbSeq is what the edge needs of the store: its change sequence.
type dbSeq interface{ Seq() uint64 }

// newOps checks the edge's configuration, registers its metrics on reg and
// installs its gqlgen extensions (the cache signal, and APQ or the trusted
// documents) on gql.
func newOps(db dbSeq, cfg Config, m *Metrics, reg prometheus.Registerer, gql *handler.Server, res *graph.Resolver) (*ops, error) {
	if reg == nil {
		reg = m.gatherer.(prometheus.Registerer) // NewMetrics made a private registry
	}
	o := &ops{db: db, m: m, epoch: newEpoch(), cacheControl: cfg.CacheControl, logger: cfg.Logger, logRequests: cfg.LogRequests, maxAge: cfg.ResponseMaxAge}
	if res != nil {
		o.upstream = func() bool { return cfg.Upstream }
	}
	if o.maxAge < 0 {
		return nil, fmt.Errorf("the response cache's maximum age must not be negative, got %s", o.maxAge)
	}
	if o.cacheControl == "" {
		o.cacheControl = DefaultCacheControl
	}
	if err := ValidateCacheControl(o.cacheControl); err != nil {
		return nil, err
	}
	size := cfg.ResponseCacheBytes
	switch {
	case size == 0:
		size = DefaultResponseCacheBytes
	case size < 0:
		size = 0 // off
	}
	var err error
	if o.cache, err = newRespCache(size, reg); err != nil {
		return nil, err
	}
	if o.reqMetrics, err = newRequestMetrics(reg); err != nil {
		return nil, err
	}
	gql.Use(cacheSignal{})
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "incidentlib_trusted_documents_rejected_total",
		Help: "Operations refused because trusted documents are on, by code (PERSISTED_QUERY_NOT_FOUND, FORBIDDEN).",
	}, []string{"code"})
	if err := reg.Register(rejected); err != nil {
		return nil, err
	}
	rejected.WithLabelValues(CodePersistedQueryNotFound) // present from start-up, 0 without trusted documents
	rejected.WithLabelValues(CodeForbidden)
	if cfg.TrustedDocuments != nil {
		if err := cfg.TrustedDocuments.check(graph.NewExecutableSchema(graph.Config{}).Schema()); err != nil {
			return nil, err
		}
		o.trusted = cfg.TrustedDocuments
		gql.Use(trustedExtension{docs: o.trusted, rejected: rejected})
	} else if cfg.APQCacheSize >= 0 {
		n := cfg.APQCacheSize
		if n == 0 {
			n = DefaultAPQCacheSize
		}
		apq, err := newAPQ(n, reg)
		if err != nil {
			return nil, err
		}
		gql.Use(apq)
	}
	return o, nil
}
