package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// manyRuns is every number below n but about holes in a thousand of them,
// spread at random, as the dated posting of a library with a few undated
// incidents: run-optimized, about a thousand runs per container.
func manyRuns(n, holes int) *roaring.Bitmap {
	r := rand.New(rand.NewPCG(1, 2))
	bm := roaring.New()
	for i := range n {
		if r.IntN(1000) >= holes {
			bm.Add(uint32(i))
		}
	}
	return bm
}

// TestPostingForm: a posting of many runs per container is stored as
// bitmap containers, one of few runs keeps them, a sparse posting of high
// numbers keeps them too (no dense copy of 2^32 bits), and the contents
// are the same whatever the form.
func TestPostingForm(t *testing.T) {
	few := roaring.New()
	few.AddRange(0, 300_000)
	few.AddRange(400_000, 500_000)
	high := roaring.New()
	for i := range uint64(600) { // 600 runs of 3 in the top container: fewer bytes than their array
		high.AddRange(0xFFFF0000+i*100, 0xFFFF0000+i*100+3)
	}
	for _, tc := range []struct {
		name     string
		bm       *roaring.Bitmap
		wantRuns bool
	}{
		{"ManyRuns", manyRuns(300_000, 15), false},
		{"FewRuns", few, true},
		{"SparseHigh", high, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.bm.Clone()
			got := countsFast(tc.bm.Clone())
			if !got.Equals(want) {
				t.Fatalf("contents changed: %d members, want %d", got.GetCardinality(), want.GetCardinality())
			}
			if runs := got.Stats().RunContainers > 0; runs != tc.wantRuns {
				t.Fatalf("stored with run containers: %v, want %v (%+v)", runs, tc.wantRuns, got.Stats())
			}
			b, err := got.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			back := roaring.New()
			if _, err := back.FromBuffer(b); err != nil || !back.Equals(want) {
				t.Fatalf("read back: %v, equal %v", err, back.Equals(want))
			}
		})
	}
}

// BenchmarkPostingForm: what a count against a posting of many runs costs
// in each form (a dated posting of 1,000,000 incidents, 1.5% undated at
// random, against a symptom's of one in five), and Contains:
//
//	go test -run '^$' -bench PostingForm -benchtime 200x ./storage/
func BenchmarkPostingForm(b *testing.B) {
	runs := manyRuns(1_000_000, 15)
	runs.RunOptimize()
	dense := countsFast(runs.Clone())
	r := rand.New(rand.NewPCG(3, 4))
	symptom := roaring.New()
	for i := range 1_000_000 {
		if r.IntN(5) == 0 {
			symptom.Add(uint32(i))
		}
	}
	symptom.RunOptimize()
	b.Logf("bytes: runs %d, bitmaps %d", runs.GetSerializedSizeInBytes(), dense.GetSerializedSizeInBytes())
	for _, form := range []struct {
		name string
		bm   *roaring.Bitmap
	}{{"runs", runs}, {"bitmaps", dense}} {
		b.Run(form.name+"/andcard", func(b *testing.B) {
			for b.Loop() {
				_ = symptom.AndCardinality(form.bm)
			}
		})
		b.Run(form.name+"/contains", func(b *testing.B) {
			for b.Loop() {
				for i := range 1000 {
					_ = form.bm.Contains(uint32(i * 997))
				}
			}
		})
	}
}
