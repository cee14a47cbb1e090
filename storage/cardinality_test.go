package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestSerializedCardinality: the count read from a serialized bitmap's
// header equals the bitmap's cardinality, for array, bitmap and run
// containers, with and without RunOptimize, and bad input is refused.
func TestSerializedCardinality(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		bm := roaring.New()
		switch i % 4 {
		case 0: // sparse: array containers over many keys
			for range rng.IntN(5000) {
				bm.Add(rng.Uint32())
			}
		case 1: // dense: bitmap containers
			for range rng.IntN(200_000) {
				bm.Add(rng.Uint32N(1 << 18))
			}
		case 2: // ranges: run containers after RunOptimize
			for range rng.IntN(20) {
				lo := uint64(rng.Uint32N(1 << 24))
				bm.AddRange(lo, lo+uint64(rng.IntN(100_000)))
			}
		case 3: // empty or tiny
			for range rng.IntN(3) {
				bm.Add(rng.Uint32N(100))
			}
		}
		if i%2 == 0 {
			bm.RunOptimize()
		}
		b, err := bm.ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := serializedCardinality(b)
		if !ok || got != bm.GetCardinality() {
			t.Fatalf("case %d: read %d (ok %v), the bitmap holds %d", i, got, ok, bm.GetCardinality())
		}
	}
	for _, bad := range [][]byte{nil, {1, 2}, {0x3b, 0x30, 0, 0}, {0x3a, 0x30, 0, 0, 5, 0, 0, 0}} {
		if n, ok := serializedCardinality(bad); ok {
			t.Errorf("%v read as %d", bad, n)
		}
	}
}
