package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
)

// fakeReads is a loader's read function over a fixed set of values that
// records every batch; a key in block waits for release before its batch
// returns.
type fakeReads struct {
	mu      sync.Mutex
	vals    map[string]*string
	batches [][]string
	block   string
	blocked bool
	started chan struct{} // closed when the blocking batch has begun
	release chan struct{}
}

func (f *fakeReads) read(_ context.Context, keys []string) ([]*string, error) {
	f.mu.Lock()
	f.batches = append(f.batches, slices.Clone(keys))
	block := f.block != "" && slices.Contains(keys, f.block) && !f.blocked
	f.blocked = f.blocked || block // only the first read of block waits
	f.mu.Unlock()
	if block {
		close(f.started)
		<-f.release
	}
	out := make([]*string, len(keys))
	for i, k := range keys {
		out[i] = f.vals[k] // nil when absent
	}
	return out, nil
}

func (f *fakeReads) seen() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// testLoader is a loader of test values with room for 8 keys.
func testLoader(pool *sync.Pool, m LoaderMetrics, read func(context.Context, []string) ([]*string, error)) *Loader[string, *string] {
	l := &Loader[string, *string]{}
	var src incidentlib.Reader
	l.setup("test", 8, pool, m, &src, func(ctx context.Context, _ incidentlib.Reader, keys []string) ([]*string, error) {
		return read(ctx, keys)
	})
	return l
}

func valuesOf(n int) map[string]*string {
	m := map[string]*string{}
	for i := range n {
		v := fmt.Sprintf("value %d", i)
		m[fmt.Sprintf("k%d", i)] = &v
	}
	return m
}

// TestLoaderLoadAll: LoadAll reads the keys it has not seen once each, in
// one batch, in the order first seen, and answers in key order with nil for
// a key that has no value; keys seen before come from the request's cache.
// Sizes on both sides of the direct comparison (16 keys) and of the
// positions kept on the stack (128) are covered.
func TestLoaderLoadAll(t *testing.T) {
	for _, n := range []int{1, 5, 16, 17, 40, 128, 129, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := &fakeReads{vals: valuesOf(n)}
			l := testLoader(nil, nil, f.read)
			// Every key twice, reversed the second time, and one missing key.
			var keys, want []string
			for i := range n {
				keys = append(keys, fmt.Sprintf("k%d", i))
			}
			unique := append(slices.Clone(keys), "missing")
			back := slices.Clone(keys)
			slices.Reverse(back)
			keys = append(append(keys, "missing"), back...)
			want = keys
			got, err := l.LoadAll(context.Background(), keys)
			if err != nil {
				t.Fatal(err)
			}
			check := func(got []*string) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%d values for %d keys", len(got), len(want))
				}
				for i, k := range want {
					if f.vals[k] != got[i] {
						t.Fatalf("key %d (%s): got %v, want %v", i, k, got[i], f.vals[k])
					}
				}
			}
			check(got)
			if b := f.seen(); len(b) != 1 || !slices.Equal(b[0], unique) {
				t.Fatalf("batches %v, want one of %v", b, unique)
			}
			// Again, with one new key: only it is read.
			want = append(slices.Clone(keys), "k-new")
			f.vals["k-new"] = new(string)
			got, err = l.LoadAll(context.Background(), want)
			if err != nil {
				t.Fatal(err)
			}
			check(got)
			if b := f.seen(); len(b) != 2 || !slices.Equal(b[1], []string{"k-new"}) {
				t.Fatalf("batches %v, want a second of [k-new]", b)
			}
		})
	}
}

// TestLoaderLoadAllBesideLoad: a key that Load is still reading is not
// read again by LoadAll, which waits for Load's value; the other keys are
// read in LoadAll's own batch.
func TestLoaderLoadAllBesideLoad(t *testing.T) {
	f := &fakeReads{vals: valuesOf(3), block: "k0", started: make(chan struct{}), release: make(chan struct{})}
	l := testLoader(nil, nil, f.read)
	ctx := context.Background()
	loaded := make(chan *string, 1)
	go func() {
		v, err := l.Load(ctx, "k0")
		if err != nil {
			t.Error(err)
		}
		loaded <- v
	}()
	<-f.started // Load's batch of k0 is being read
	all := make(chan []*string, 1)
	go func() {
		vs, err := l.LoadAll(ctx, []string{"k1", "k0", "k2"})
		if err != nil {
			t.Error(err)
		}
		all <- vs
	}()
	select {
	case vs := <-all:
		t.Fatalf("LoadAll returned %v before Load's read of k0 ended", vs)
	case <-time.After(50 * time.Millisecond):
	}
	close(f.release)
	vs := <-all
	if v := <-loaded; v != f.vals["k0"] {
		t.Fatalf("Load: %v", v)
	}
	if vs[0] != f.vals["k1"] || vs[1] != f.vals["k0"] || vs[2] != f.vals["k2"] {
		t.Fatalf("LoadAll: %v", vs)
	}
	want := [][]string{{"k0"}, {"k1", "k2"}}
	if b := f.seen(); !slices.EqualFunc(b, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", b, want)
	}
}

// TestLoaderRelease: a finished request's cache goes back to its pool
// empty, so the next request's loader reads every key again; a loader whose
// dataloader was made keeps its cache.
func TestLoaderRelease(t *testing.T) {
	ctx := context.Background()
	pool := &sync.Pool{}
	f := &fakeReads{vals: valuesOf(3)}
	first := testLoader(pool, nil, f.read)
	if _, err := first.LoadAll(ctx, []string{"k0", "k1"}); err != nil {
		t.Fatal(err)
	}
	kept := first.cache
	first.release()
	if first.cache != nil {
		t.Fatal("the released loader still has its cache")
	}
	if len(kept.vals) != 0 {
		t.Fatalf("the cache went back to its pool with %d values", len(kept.vals))
	}
	next := testLoader(pool, nil, f.read)
	got, err := next.LoadAll(ctx, []string{"k1", "k2"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != f.vals["k1"] || got[1] != f.vals["k2"] {
		t.Fatalf("values %v", got)
	}
	want := [][]string{{"k0", "k1"}, {"k1", "k2"}}
	if b := f.seen(); !slices.EqualFunc(b, want, slices.Equal) {
		t.Fatalf("batches %v, want %v: the next request must not see the last one's values", b, want)
	}

	withLoad := testLoader(pool, nil, f.read)
	if _, err := withLoad.Load(ctx, "k0"); err != nil {
		t.Fatal(err)
	}
	withLoad.release()
	if withLoad.cache == nil {
		t.Fatal("a cache the dataloader holds was given back")
	}
}

// TestLoaderLoadAllAfterError: a batch that fails leaves nothing behind; the
// same keys loaded again are all read and answered in order (LoadAll keeps
// its map of a level's keys for the next level).
func TestLoaderLoadAllAfterError(t *testing.T) {
	ctx := context.Background()
	f := &fakeReads{vals: valuesOf(40)}
	fail := true
	l := testLoader(nil, nil, func(ctx context.Context, keys []string) ([]*string, error) {
		if fail {
			fail = false
			return nil, errors.New("store unavailable")
		}
		return f.read(ctx, keys)
	})
	var keys []string
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("k%d", (i*7)%40)) // every key once, shuffled
	}
	if _, err := l.LoadAll(ctx, keys); err == nil {
		t.Fatal("the failed batch gave no error")
	}
	slices.Reverse(keys)
	got, err := l.LoadAll(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if got[i] != f.vals[k] {
			t.Fatalf("key %d (%s): got %v, want %v", i, k, got[i], f.vals[k])
		}
	}
	if b := f.seen(); len(b) != 1 || !slices.Equal(b[0], keys) {
		t.Fatalf("batches %v, want one of %v", b, keys)
	}
}
