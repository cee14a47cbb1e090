package graph

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// LoaderWait is how long a loader collects keys before it reads them. Keys a
// resolver knows up front never wait on it: they go through LoadAll, which
// reads at once. 16 ms (the library default) would add 16 ms per level.
const LoaderWait = 500 * time.Microsecond

// LoaderNames lists every loader, for metrics present from start-up.
var LoaderNames = []string{"incident", "recurrences", "organization", "term", "count"}

// LoaderMetrics counts batches and keys per loader.
type LoaderMetrics interface {
	Batch(loader string, keys int)
}

// Loader is a dataloader that can also load a set of keys it knows up front
// in one batch, without waiting on the batch window: the number of batches
// then depends on the query, not on scheduling.
type Loader[K comparable, V any] struct {
	dl    *dataloader.Loader[K, V]
	cache *loaderCache[K, V]
	fetch func(ctx context.Context, keys []K) ([]V, error)
}

// newLoader makes a loader whose cache starts with room for size keys.
func newLoader[K comparable, V any](name string, size int, m LoaderMetrics, fetch func(ctx context.Context, keys []K) ([]V, error)) *Loader[K, V] {
	l := &Loader[K, V]{cache: &loaderCache[K, V]{m: make(map[K]dataloader.Thunk[V], size)}}
	l.fetch = func(ctx context.Context, keys []K) ([]V, error) {
		if m != nil {
			m.Batch(name, len(keys))
		}
		return fetch(ctx, keys)
	}
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
	return l
}

// loaderCache is the dataloader's cache of one request: the library's
// in-memory cache with room for a page's keys from the start, so that a
// request does not regrow its maps level after level.
type loaderCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]dataloader.Thunk[V]
}

func (c *loaderCache[K, V]) Get(_ context.Context, k K) (dataloader.Thunk[V], bool) {
	c.mu.RLock()
	t, ok := c.m[k]
	c.mu.RUnlock()
	return t, ok
}

func (c *loaderCache[K, V]) Set(_ context.Context, k K, t dataloader.Thunk[V]) {
	c.mu.Lock()
	c.m[k] = t
	c.mu.Unlock()
}

func (c *loaderCache[K, V]) Delete(_ context.Context, k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[k]
	delete(c.m, k)
	return ok
}

func (c *loaderCache[K, V]) Clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// Load loads one key through the batch window.
func (l *Loader[K, V]) Load(ctx context.Context, key K) (V, error) {
	return l.dl.Load(ctx, key)()
}

// LoadAll returns the values of keys in order: keys not seen before in this
// request are read in one batch at once, the others come from the cache.
// When every key is cached (the batch resolvers after a prefetch) it
// allocates only the result.
func (l *Loader[K, V]) LoadAll(ctx context.Context, keys []K) ([]V, error) {
	out := make([]V, len(keys))
	var misses []int // positions in keys not in the cache
	for i, k := range keys {
		thunk, ok := l.cache.Get(ctx, k)
		if !ok {
			misses = append(misses, i)
			continue
		}
		v, err := thunk()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	if len(misses) == 0 {
		return out, nil
	}
	missing := make([]K, 0, len(misses))
	seen := make(map[K]bool, len(misses))
	for _, i := range misses {
		if k := keys[i]; !seen[k] {
			seen[k] = true
			missing = append(missing, k)
		}
	}
	vals, err := l.fetch(ctx, missing)
	if err != nil {
		return nil, err
	}
	for i, k := range missing {
		l.dl.Prime(ctx, k, vals[i])
	}
	for _, i := range misses {
		thunk, ok := l.cache.Get(ctx, keys[i])
		if !ok { // cleared meanwhile after a panic: load it the slow way
			thunk = l.dl.Load(ctx, keys[i])
		}
		v, err := thunk()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Loaders are the dataloaders of one request.
type Loaders struct {
	Incidents     *Loader[string, *incidentlib.Incident]
	Recurrences   *Loader[string, []string]
	Organizations *Loader[string, *incidentlib.Organization]
	Terms         *Loader[incidentlib.TermKey, *incidentlib.Term]
	Counts        *Loader[incidentlib.CountKey, int]

	view *model.View
}

// NewLoaders builds the loaders of one request over the services, with the
// request's view (its language from ctx).
func NewLoaders(ctx context.Context, r *Resolver) *Loaders {
	m := r.LoaderMetrics
	return &Loaders{
		view: r.viewFor(LangFrom(ctx)),
		Incidents: newLoader("incident", 128, m, func(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
			return r.findIncidents(ctx, ids) // the store, then any upstream (upstream.go)
		}),
		Recurrences: newLoader("recurrences", 32, m, func(ctx context.Context, ids []string) ([][]string, error) {
			return r.Incidents.RecurrenceIDs(ctx, ids)
		}),
		Organizations: newLoader("organization", 32, m, func(ctx context.Context, slugs []string) ([]*incidentlib.Organization, error) {
			return r.Organizations.FindOrganizationsBySlugs(ctx, slugs)
		}),
		Terms: newLoader("term", 0, m, func(ctx context.Context, keys []incidentlib.TermKey) ([]*incidentlib.Term, error) {
			out := make([]*incidentlib.Term, len(keys))
			for i, k := range keys {
				out[i] = r.Taxonomy.Term(k.Kind, k.Slug)
			}
			return out, nil
		}),
		Counts: newLoader("count", 32, m, func(ctx context.Context, keys []incidentlib.CountKey) ([]int, error) {
			return r.Incidents.CountIncidentsBy(ctx, keys)
		}),
	}
}

type loadersKey struct{}

// Middleware puts a fresh set of loaders into every request's context.
func (r *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := context.WithValue(req.Context(), loadersKey{}, NewLoaders(req.Context(), r))
		next.ServeHTTP(w, req.WithContext(ctx))
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
