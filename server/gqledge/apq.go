package gqledge

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/prometheus/client_golang/prometheus"
)

// Automatic persisted queries: gqlgen's own extension (the protocol Apollo
// and urql clients speak) over gqlgen's LRU, bounded in documents
// (--apq-cache-size). A client sends
//
//	{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "<hex SHA-256 of the document>"}}, "variables": ...}
//
// by POST, or the same as GET parameters
//
//	GET /graphql?extensions={"persistedQuery":{"version":1,"sha256Hash":"..."}}&variables={"first":20}
//
// The first time, the server answers PERSISTED_QUERY_NOT_FOUND and the
// client sends the hash with the document, which registers it (the hash is
// checked); from then on the short request is enough. GET by hash keeps the
// URL short, so browsers and CDNs can cache pages (see respcache/httpcache.go). With
// --trusted-documents the APQ cache is off and the manifest answers instead.

// DefaultAPQCacheSize is how many documents APQ keeps by default.
const DefaultAPQCacheSize = 1000

// apqCache counts what the APQ extension asks of its LRU.
type apqCache struct {
	lru                   *lru.LRU[string]
	hit, miss, registered prometheus.Counter
}

func newAPQ(size int, reg prometheus.Registerer) (graphql.HandlerExtension, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "incidentlib_apq_requests_total",
		Help: "Automatic persisted query lookups by outcome: hit (the hash was known), miss (PERSISTED_QUERY_NOT_FOUND), register (a document sent with its hash was stored).",
	}, []string{"outcome"})
	if err := reg.Register(requests); err != nil {
		return nil, err
	}
	c := &apqCache{
		lru:        lru.New[string](size),
		hit:        requests.WithLabelValues("hit"),
		miss:       requests.WithLabelValues("miss"),
		registered: requests.WithLabelValues("register"),
	}
	return extension.AutomaticPersistedQuery{Cache: c}, nil
}

func (c *apqCache) Get(ctx context.Context, key string) (string, bool) {
	v, ok := c.lru.Get(ctx, key)
	if ok {
		c.hit.Inc()
	} else {
		c.miss.Inc()
	}
	return v, ok
}

func (c *apqCache) Add(ctx context.Context, key, value string) {
	c.registered.Inc()
	c.lru.Add(ctx, key, value)
}

// DocumentHash is the hash a client sends for a document in the APQ
// extension: the hex SHA-256 of its text.
func DocumentHash(doc string) string { return sha256Hex(doc) }
