package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// TestCrossCountsBothWays: the bitset counts and roaring's, taken for
// sets spread too wide for bitsets, equal a count number by number.
func TestCrossCountsBothWays(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bdb, err := bolt.Open(filepath.Join(t.TempDir(), "x.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	tx, err := bdb.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var cache denseCache
	for _, spread := range []uint32{5_000, 200_000, 1 << 30} {
		random := func(n int) *roaring.Bitmap {
			bm := roaring.New()
			for range n {
				bm.Add(rng.Uint32N(spread))
			}
			return bm
		}
		set := random(3000)
		var as, bs []namedPosting
		for k := range 6 {
			as = append(as, namedPosting{key: fmt.Sprint("a", spread, k), bm: random(800)})
			bs = append(bs, namedPosting{key: fmt.Sprint("b", spread, k), bm: random(1500)})
		}
		got := map[[2]int]uint64{}
		for range 2 { // the second time from the cache
			clear(got)
			cache.crossCounts(tx, set, as, bs, func(i, j int, n uint64) { got[[2]int{i, j}] = n })
		}
		for i, a := range as {
			for j, b := range bs {
				var want uint64
				set.Iterate(func(x uint32) bool {
					if a.bm.Contains(x) && b.bm.Contains(x) {
						want++
					}
					return true
				})
				if got[[2]int{i, j}] != want {
					t.Fatalf("spread %d: cell %d,%d is %d, want %d", spread, i, j, got[[2]int{i, j}], want)
				}
			}
		}
		if words, ok := denseWords(set); ok {
			w := make([]uint64, words)
			set.WriteDenseTo(w)
			if n := countIn(w, as[0].bm); n != set.AndCardinality(as[0].bm) {
				t.Fatalf("spread %d: countIn %d, want %d", spread, n, set.AndCardinality(as[0].bm))
			}
		} else if spread < 1<<20 {
			t.Fatalf("spread %d counted without bitsets", spread)
		}
	}
}
