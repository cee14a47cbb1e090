package graph

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/tracing"
)

// LoaderWait is how long a loader collects keys before it reads them. Keys a
// resolver knows up front never wait on it: they go through LoadAll, which
// reads at once. 16 ms (the library default) would add 16 ms per level.
const LoaderWait = 500 * time.Microsecond

// LoaderNames lists every loader, for metrics present from start-up.
var LoaderNames = []string{"incident", "recurrences", "relatedBy", "organization", "term", "count"}

// LoaderMetrics counts batches and keys per loader.
type LoaderMetrics interface {
	Batch(loader string, keys int)
}

// Loader is a dataloader that can also load a set of keys it knows up front
// in one batch, without waiting on the batch window: the number of batches
// then depends on the query, not on scheduling.
type Loader[K comparable, V any] struct {
	name   string
	size   int
	m      LoaderMetrics
	read   func(ctx context.Context, src incidentlib.Reader, keys []K) ([]V, error)
	src    *incidentlib.Reader // the request's (Loaders.reader)
	pool   *sync.Pool          // of emptied caches, from earlier requests
	once   sync.Once           // a request makes only the loaders it uses
	cache  *loaderCache[K, V]
	dlOnce sync.Once // and the dataloader only if a resolver loads one key
	dl     *dataloader.Loader[K, V]
}

// setup describes the zero loader l in place: it reads with read from
// *src; its cache starts with room for size keys; its cache and dataloader
// are made at its first use, the cache taken from pool when it has one
// (pool may be nil).
func (l *Loader[K, V]) setup(name string, size int, pool *sync.Pool, m LoaderMetrics, src *incidentlib.Reader, read func(ctx context.Context, src incidentlib.Reader, keys []K) ([]V, error)) {
	l.name, l.size, l.pool, l.m, l.src, l.read = name, size, pool, m, src, read
}

func (l *Loader[K, V]) init() {
	l.once.Do(func() {
		if l.pool != nil {
			if c, ok := l.pool.Get().(*loaderCache[K, V]); ok {
				l.cache = c
				return
			}
		}
		l.cache = newLoaderCache[K, V](l.size)
	})
}

// release gives the loader's cache, emptied, to its pool when its request
// is over: the next request's loader starts with the same map instead of
// a new one. A cache the dataloader's Load path used is left alone (its
// batches hold it), and so is one grown far beyond its size.
func (l *Loader[K, V]) release() {
	c := l.cache
	if c == nil || l.pool == nil || l.dl != nil || len(c.vals) > 4*l.size+64 {
		return
	}
	l.cache = nil
	clear(c.vals)
	l.pool.Put(c)
}

// initLoad makes the dataloader of Load, over the cache LoadAll fills.
func (l *Loader[K, V]) initLoad() {
	l.init()
	l.dlOnce.Do(func() {
		batch := func(ctx context.Context, keys []K) []*dataloader.Result[V] {
			vals, err := l.fetch(ctx, keys)
			out := make([]*dataloader.Result[V], len(keys))
			for i := range keys {
				if err != nil {
					out[i] = &dataloader.Result[V]{Error: err}
				} else {
					out[i] = &dataloader.Result[V]{Data: vals[i]}
				}
			}
			return out
		}
		l.dl = dataloader.NewBatchedLoader(batch,
			dataloader.WithWait[K, V](LoaderWait),
			dataloader.WithCache[K, V](l.cache),
			dataloader.WithBatchCapacity[K, V](1000),
		)
	})
}

// fetch reads keys in one batch and counts it.
func (l *Loader[K, V]) fetch(ctx context.Context, keys []K) ([]V, error) {
	if l.m != nil {
		l.m.Batch(l.name, len(keys))
	}
	ctx, span := tracing.StartKV(ctx, "loader batch", "incidentlib.loader", l.name)
	defer span.End()
	return l.read(ctx, *l.src, keys)
}

// loaderCache is the cache of one request's loader. LoadAll keeps the
// values it read as values, with room for a page's keys from the start; the
// dataloader's own Load path keeps its thunks beside them (made at its
// first Set) and sees LoadAll's values as resolved thunks. (The library's
// in-memory cache wraps every value in a closure and regrows its map level
// after level.)
type loaderCache[K comparable, V any] struct {
	mu     sync.RWMutex
	vals   map[K]V
	thunks map[K]dataloader.Thunk[V] // nil until the Load path sets one

	// dedupe is LoadAll's map of a level's missing keys, emptied after
	// each use and kept (with the cache, from request to request) for
	// the next; a LoadAll running beside the one using it makes its own.
	dedupeMu sync.Mutex
	dedupe   map[K]int
}

// dedupeMap returns an empty map for n keys, the cache's own (kept) if it
// is free and n is not too many, else a new one; give it back with
// doneDedupe.
func (c *loaderCache[K, V]) dedupeMap(n int) (m map[K]int, kept bool) {
	if n <= maxKeptDedupe && c.dedupeMu.TryLock() {
		if c.dedupe == nil {
			c.dedupe = make(map[K]int, n)
		}
		return c.dedupe, true
	}
	return make(map[K]int, n), false
}

// doneDedupe empties and frees the cache's own map after a dedupeMap.
func (c *loaderCache[K, V]) doneDedupe(kept bool) {
	if kept {
		clear(c.dedupe)
		c.dedupeMu.Unlock()
	}
}

// maxKeptDedupe is the most keys the kept dedupe map is used for (it
// keeps the room it grew to).
const maxKeptDedupe = 512

func newLoaderCache[K comparable, V any](size int) *loaderCache[K, V] {
	return &loaderCache[K, V]{vals: make(map[K]V, size)}
}

// value returns k's value if the request has read or is reading it.
func (c *loaderCache[K, V]) value(k K) (v V, ok bool, err error) {
	c.mu.RLock()
	v, ok = c.vals[k]
	if ok {
		c.mu.RUnlock()
		return v, true, nil
	}
	t, ok := c.thunks[k]
	c.mu.RUnlock()
	if !ok {
		return v, false, nil
	}
	v, err = t()
	return v, true, err
}

// values puts the cached values of keys into out and appends the
// positions of the others to misses, under one lock. It reports false,
// doing nothing, when the Load path has thunks in the cache: their values
// may still be coming (see value).
func (c *loaderCache[K, V]) values(keys []K, out []V, misses []int) ([]int, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.thunks) > 0 {
		return misses, false
	}
	for i, k := range keys {
		if v, ok := c.vals[k]; ok {
			out[i] = v
		} else {
			misses = append(misses, i)
		}
	}
	return misses, true
}

// put keeps the values read for keys.
func (c *loaderCache[K, V]) put(keys []K, vals []V) {
	c.mu.Lock()
	for i, k := range keys {
		c.vals[k] = vals[i]
	}
	c.mu.Unlock()
}

func (c *loaderCache[K, V]) Get(_ context.Context, k K) (dataloader.Thunk[V], bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if t, ok := c.thunks[k]; ok {
		return t, true
	}
	if v, ok := c.vals[k]; ok {
		return func() (V, error) { return v, nil }, true
	}
	return nil, false
}

func (c *loaderCache[K, V]) Set(_ context.Context, k K, t dataloader.Thunk[V]) {
	c.mu.Lock()
	if c.thunks == nil {
		c.thunks = make(map[K]dataloader.Thunk[V])
	}
	c.thunks[k] = t
	c.mu.Unlock()
}

func (c *loaderCache[K, V]) Delete(_ context.Context, k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, inVals := c.vals[k]
	_, inThunks := c.thunks[k]
	delete(c.vals, k)
	delete(c.thunks, k)
	return inVals || inThunks
}

func (c *loaderCache[K, V]) Clear() {
	c.mu.Lock()
	clear(c.vals)
	clear(c.thunks)
	c.mu.Unlock()
}

// Load loads one key through the batch window.
func (l *Loader[K, V]) Load(ctx context.Context, key K) (V, error) {
	l.initLoad()
	return l.dl.Load(ctx, key)()
}

// LoadAll returns the values of keys in order: keys not seen before in this
// request are read in one batch at once, the others come from the cache.
// When every key is cached (the batch resolvers after a prefetch) it
// allocates only the result.
func (l *Loader[K, V]) LoadAll(ctx context.Context, keys []K) ([]V, error) {
	l.init()
	out := make([]V, len(keys))
	var buf [2 * stackKeys]int
	misses, ok := l.cache.values(keys, out, buf[:0:stackKeys]) // positions in keys not in the cache
	if !ok {
		for i, k := range keys {
			v, ok, err := l.cache.value(k)
			if err != nil {
				return nil, err
			}
			if !ok {
				misses = append(misses, i)
				continue
			}
			out[i] = v
		}
	}
	if len(misses) == 0 {
		return out, nil
	}
	// Each missing key once, in the order first seen; from[j] is the
	// position in missing of keys[misses[j]]. A few keys are compared
	// directly, more go through a map.
	missing := make([]K, 0, len(misses))
	from := buf[stackKeys:]
	if len(misses) > len(from) {
		from = make([]int, len(misses))
	}
	var at map[K]int
	if len(misses) > dedupeScan {
		var kept bool
		at, kept = l.cache.dedupeMap(len(misses))
		defer l.cache.doneDedupe(kept)
	}
	for j, i := range misses {
		k := keys[i]
		pos := -1
		if at != nil {
			if p, ok := at[k]; ok {
				pos = p
			}
		} else {
			pos = slices.Index(missing, k)
		}
		if pos < 0 {
			pos = len(missing)
			missing = append(missing, k)
			if at != nil {
				at[k] = pos
			}
		}
		from[j] = pos
	}
	vals, err := l.fetch(ctx, missing)
	if err != nil {
		return nil, err
	}
	if len(vals) != len(missing) {
		return nil, fmt.Errorf("loader: %d values for %d keys", len(vals), len(missing))
	}
	l.cache.put(missing, vals)
	for j, i := range misses {
		out[i] = vals[from[j]]
	}
	return out, nil
}

// stackKeys is how many keys LoadAll tracks without allocating.
const stackKeys = 128

// dedupeScan is how many missing keys LoadAll dedupes by comparing them
// with each other (cheaper than a map's hashing at this size).
const dedupeScan = 16

// Loaders are the dataloaders of one request, made in one allocation.
type Loaders struct {
	Incidents     Loader[string, *incidentlib.Incident]
	Recurrences   Loader[string, []string]
	RelatedBy     Loader[string, []string]
	Organizations Loader[string, *incidentlib.Organization]
	Terms         Loader[incidentlib.TermKey, *incidentlib.Term]
	Counts        Loader[incidentlib.CountKey, int]

	view *model.View
	// reader is what the loaders read from: services (the resolver's), or
	// while FastReads answers, snapshot, a snapshot of the store
	// (reads.go).
	reader   incidentlib.Reader
	services incidentlib.Reader
	snapshot incidentlib.Snapshot
}

// loaderPools hold the emptied caches of finished requests' loaders, one
// pool per loader (see Loader.release).
type loaderPools struct {
	incidents, recurrences, relatedBy, organizations, terms, counts sync.Pool
}

// release gives the loaders' caches back to their pools; the loaders must
// not be used after it.
func (ls *Loaders) release() {
	ls.Incidents.release()
	ls.Recurrences.release()
	ls.RelatedBy.release()
	ls.Organizations.release()
	ls.Terms.release()
	ls.Counts.release()
}

// NewLoaders builds the loaders of one request over the services, with the
// request's view (its language from ctx).
func NewLoaders(ctx context.Context, r *Resolver) *Loaders {
	m, p, f := r.LoaderMetrics, &r.loaderPools, r.reads()
	ls := &Loaders{view: r.viewFor(LangFrom(ctx)), reader: r.services, services: r.services}
	src := &ls.reader
	// Sizes are what a map of a power of two slots holds (7/8 of them):
	// 112 keys take 128 slots where 128 would take 256; 28 take 32.
	ls.Incidents.setup("incident", 112, &p.incidents, m, src, f.incidents)
	ls.Recurrences.setup("recurrences", 28, &p.recurrences, m, src, f.recurrences)
	ls.RelatedBy.setup("relatedBy", 28, &p.relatedBy, m, src, f.relatedBy)
	ls.Organizations.setup("organization", 28, &p.organizations, m, src, f.organizations)
	ls.Terms.setup("term", 0, &p.terms, m, src, f.terms)
	ls.Counts.setup("count", 28, &p.counts, m, src, f.counts)
	return ls
}

type loadersKey struct{}

// Middleware puts a fresh set of loaders into every request's context and
// gives their caches back when the request is over (everything the request
// started, gqlgen's field goroutines included, has ended by then).
func (r *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ls := NewLoaders(req.Context(), r)
		ctx := context.WithValue(req.Context(), loadersKey{}, ls)
		if r.IncidentURL != nil {
			ctx = withIncidentURLs(ctx, r.IncidentURL, req)
		}
		next.ServeHTTP(w, req.WithContext(ctx))
		ls.release()
	})
}

// For returns the loaders of the request in ctx. Outside a request (tests
// calling resolvers directly) it makes a fresh set.
func (r *Resolver) loaders(ctx context.Context) *Loaders {
	if l, ok := ctx.Value(loadersKey{}).(*Loaders); ok {
		return l
	}
	return NewLoaders(ctx, r)
}
