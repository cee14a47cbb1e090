package gqledge

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/server/gqledge/respcache"
	"github.com/incidentlib/incidentlib/server/metrics"
)

// The response cache as a handler around gqlgen: a lookup by the
// request's key, the capture of a miss's response, the replay of a stored
// one with HTTP caching headers, and the gqlgen extension that tells the
// cache what ran (respcache/cache.go describes the cache).

const (
	// DefaultResponseCacheBytes is the response cache's default bound.
	DefaultResponseCacheBytes = 64 << 20
	// maxCachedRequestBody is the largest request body whose response is
	// considered for caching; larger requests pass through untouched.
	maxCachedRequestBody = 64 << 10
)

// perRequestHeaders are never stored with a response: they describe one
// exchange, not the response (Content-Length is set again on replay).
var perRequestHeaders = []string{"Date", "Content-Length", "X-Request-Id", "Retry-After"}

// cachingHandler wraps the GraphQL handler with the response cache and
// HTTP caching.
func (o *Edge) cachingHandler(next http.Handler) http.Handler {
	return &cachingHandler{o: o, next: next}
}

type cachingHandler struct {
	o    *Edge
	next http.Handler
}

// freshness says, for a lookup now, which entries are too old and whether a
// new one may be stored. Data from an upstream library are not covered by
// the store's sequence: with an upstream, entries also expire after maxAge,
// and are not kept at all without one.
func (o *Edge) freshness() (now, bornAfter int64, store bool) {
	if o.upstream {
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
// have passed (guard.go, graphqlHTTP, says why that is enough).
func (h *cachingHandler) serveHit(w http.ResponseWriter, r *http.Request, raw []byte) bool {
	o := h.o
	if !o.cache.Enabled() || o.stale(stateOf(r.Context())) {
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
	e := o.cache.Peek(req.key(r, requestLang(r)), o.changes.Seq(), bornAfter)
	if e == nil {
		return false
	}
	o.cache.Count(respcache.Hit)
	if st := stateOf(r.Context()); st != nil {
		st.cache, st.docHash = respcache.Hit, req.docHash
		st.noteHit(e)
		if st.debug && req.query != "" {
			st.queryPrefix = truncate(req.query, logPrefixBytes)
			st.varsPrefix = truncate(string(req.vars), logPrefixBytes)
		}
	}
	o.httpCaching.Replay(w, r, e, get)
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
		st.cache = respcache.Bypass
		o.cache.Count(respcache.Bypass)
		next.ServeHTTP(w, r)
		return
	}
	st.op, st.docHash = req.op, req.docHash
	if st.debug && req.query != "" {
		st.queryPrefix = truncate(req.query, logPrefixBytes)
		st.varsPrefix = truncate(string(req.vars), logPrefixBytes)
	}
	key := req.key(r, requestLang(r))
	seq := o.changes.Seq()
	get := r.Method == http.MethodGet
	now, bornAfter, store := o.freshness()
	stale := o.stale(st)
	switch {
	case stale: // stale.go: the cache steps aside
		st.cache = respcache.Bypass
		o.cache.Count(respcache.Bypass)
	case o.cache.Enabled():
		e, outcome := o.cache.Get(key, seq, bornAfter)
		st.cache = outcome
		o.cache.Count(outcome)
		if e != nil {
			st.noteHit(e)
			o.httpCaching.Replay(w, r, e, get)
			return
		}
	default:
		st.cache = respcache.Off
		o.cache.Count(respcache.Off)
	}

	st.slot = &cacheSlot{}
	buf := graph.PooledBuffer()
	defer graph.PutBuffer(buf) // written by then, and a stored body is a copy
	cw := respcache.NewCapture(buf)
	next.ServeHTTP(cw, r)
	slot := st.slot
	st.slot = nil
	if slot.op != "" {
		st.op = slot.op
	}
	st.cost = slot.cost
	status := cw.Status()
	cacheable := slot.executed && !slot.noStore && status == http.StatusOK && cw.Header().Get("Set-Cookie") == ""
	if !cacheable {
		respcache.CopyHeader(w.Header(), cw.Header())
		if _, authed := incidentlib.IdentityFrom(r.Context()); get || authed {
			// A response to a token (a new token's secret among them) is
			// kept by no cache.
			w.Header().Set("Cache-Control", "no-store")
		}
		w.WriteHeader(status)
		_, _ = w.Write(cw.Body())
		return
	}
	hdr := cw.Header().Clone()
	for _, h := range perRequestHeaders {
		hdr.Del(h)
	}
	e := &respcache.Entry{
		Key: key, Seq: seq, Status: status, Header: hdr, Body: cw.Body(),
		Op: slot.op, Cost: slot.cost, Born: now,
	}
	e.Measure()
	o.finish(e)
	if o.cache.Enabled() && store && !stale {
		e.Body = bytes.Clone(e.Body) // the capture's buffer goes back to the pool
		e.HitDuration = o.reqMetrics.duration.WithLabelValues(o.m.OperationLabel(e.Op), respcache.Hit)
		o.cache.Put(e, o.changes.Seq())
	}
	o.httpCaching.Replay(w, r, e, get)
}

// finish computes what every replay of e writes or logs the same.
func (o *Edge) finish(e *respcache.Entry) {
	e.ETag = o.httpCaching.ETag(e)
	e.ContentLength = []string{strconv.Itoa(len(e.Body))}
	if e.Cost != nil {
		e.CostText = truncate(costString(e.Cost), 32)
	}
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
	if oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		// A subscription's events: one connection (graphql-transport-ws)
		// runs several at once, each in its own goroutine, and none of
		// them is the request's one answer to log or keep.
		return resp
	}
	name := metrics.OperationName(oc)
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
	if _, authed := incidentlib.IdentityFrom(ctx); authed {
		// What a token may read (the token list) is not every reader's,
		// and its token may be revoked: never kept.
		slot.noStore = true
	}
	if graph.VariesByRequest(ctx) { // a citation: the request's host and day
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
