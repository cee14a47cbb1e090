package storage

import (
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2"
)

// Dense bitsets for the aggregates (stats.go). Crossing two lists of
// postings counts many intersections of a few thousand incidents each:
// two roaring arrays are merged element by element (microseconds each, a
// byYear of 30 years by 15 terms took milliseconds at 100,000 incidents),
// two bitsets over the set's range of numbers are a popcount of a few
// thousand words.

// maxDenseWords bounds a dense bitset (2 MiB): a set spread over more
// numbers is counted with roaring's own intersections.
const maxDenseWords = 1 << 18

// denseRange is the range of incident numbers a set's bitsets cover.
type denseRange struct {
	base  uint32
	words int
}

// denseRangeOf is the range of set, or false when set is empty or spread
// too wide for bitsets.
func denseRangeOf(set *roaring.Bitmap) (denseRange, bool) {
	if set.IsEmpty() {
		return denseRange{}, false
	}
	lo, hi := set.Minimum(), set.Maximum()
	words := int((hi-lo)/64) + 1
	return denseRange{base: lo, words: words}, words <= maxDenseWords
}

// of is bm as a bitset over the range (numbers outside it left out).
func (r denseRange) of(bm *roaring.Bitmap) []uint64 {
	w := make([]uint64, r.words)
	var buf [256]uint32
	limit := uint64(r.words) * 64
	it := bm.ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		for _, x := range buf[:n] {
			if x < r.base {
				continue
			}
			d := uint64(x - r.base)
			if d >= limit {
				return w
			}
			w[d>>6] |= 1 << (d & 63)
		}
	}
	return w
}

// andInPlace keeps in a the bits also in b, and reports whether any is left.
func andInPlace(a, b []uint64) bool {
	var any uint64
	for i := range a {
		a[i] &= b[i]
		any |= a[i]
	}
	return any != 0
}

// andCount is how many bits a and b share.
func andCount(a, b []uint64) uint64 {
	var n int
	for i := range a {
		n += bits.OnesCount64(a[i] & b[i])
	}
	return uint64(n)
}

// countIn is how many numbers of bm are in the bitset w over r, walking
// bm: for many small postings against one set.
func (r denseRange) countIn(w []uint64, bm *roaring.Bitmap) uint64 {
	var n uint64
	var buf [256]uint32
	limit := uint64(r.words) * 64
	it := bm.ManyIterator()
	for k := it.NextMany(buf[:]); k > 0; k = it.NextMany(buf[:]) {
		for _, x := range buf[:k] {
			if x < r.base {
				continue
			}
			d := uint64(x - r.base)
			if d >= limit {
				return n
			}
			n += (w[d>>6] >> (d & 63)) & 1
		}
	}
	return n
}

// crossCounts calls emit with |set ∩ as[i] ∩ bs[j]| for every pair with
// a count, in the order of as, then bs.
func crossCounts(set *roaring.Bitmap, as, bs []namedPosting, emit func(i, j int, n uint64)) {
	r, ok := denseRangeOf(set)
	if !ok {
		if set.IsEmpty() {
			return
		}
		for i, a := range as {
			in := roaring.And(set, a.bm)
			if in.IsEmpty() {
				continue
			}
			for j, b := range bs {
				if n := in.AndCardinality(b.bm); n > 0 {
					emit(i, j, n)
				}
			}
		}
		return
	}
	sw := r.of(set)
	bw := make([][]uint64, len(bs))
	for i, a := range as {
		aw := r.of(a.bm)
		if !andInPlace(aw, sw) {
			continue
		}
		for j, b := range bs {
			if bw[j] == nil {
				bw[j] = r.of(b.bm)
			}
			if n := andCount(aw, bw[j]); n > 0 {
				emit(i, j, n)
			}
		}
	}
}
