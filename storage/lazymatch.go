package storage

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// A filter's set, read as far as its reader needs (issue 32): match
// (matchFields) leaves it as the postings and unions it intersects (its
// parts) less the unlisted incidents (minus), and
//
//   - its size (totalCount, CountIncidents) is counted with
//     AndCardinality, never built: with one part its size less the
//     unlisted in it; with two, their AndCardinality; with more, the
//     smaller parts are intersected first (reduce) and their result is
//     counted against the largest;
//   - the first page of a large set is found by a walk of the order index
//     that asks each part Contains (indexSeq), unless the walk would
//     cost more than building the set (walkCostModel);
//   - what counts one posting after another (facets, years) or hands the
//     set over (MatchSet, stats, search, subscriptions, set filters)
//     builds it once (set) and reads that.
//
// Each path is held to the brute force by TestPeriodFiltersMatchBruteForce
// and TestSetFilterDifferential, with the walk forced each way
// (SetMembershipMode).

// set is the whole set, built at its first call (a part itself when it
// is the set): valid inside the transaction, never to be modified unless
// own.
func (ms *matchSet) set() *roaring.Bitmap {
	if ms.bm != nil {
		return ms.bm
	}
	if len(ms.parts) == 1 && ms.minus == nil {
		ms.bm = ms.parts[0]
		return ms.bm
	}
	ms.reduce()
	if len(ms.parts) == 1 {
		ms.bm = ms.parts[0].Clone()
	} else {
		ms.bm = roaring.And(ms.parts[0], ms.parts[1])
	}
	if ms.minus != nil {
		ms.bm.AndNot(ms.minus)
	}
	ms.own = true
	return ms.bm
}

// setTo makes bm, the caller's own, the whole set.
func (ms *matchSet) setTo(bm *roaring.Bitmap) {
	ms.parts, ms.minus, ms.bm, ms.own = []*roaring.Bitmap{bm}, nil, bm, true
	ms.all, ms.counted, ms.reduced = false, false, true
}

// reduce sorts the parts by size and intersects all but the largest, so
// that at most two remain: the smaller ones' intersection, which is no
// larger than the smallest part, and the largest part, never built.
func (ms *matchSet) reduce() {
	if ms.reduced {
		return
	}
	ms.reduced = true
	if len(ms.parts) < 2 {
		return
	}
	parts := slices.Clone(ms.parts)
	slices.SortFunc(parts, func(a, b *roaring.Bitmap) int {
		ca, cb := a.GetCardinality(), b.GetCardinality()
		switch {
		case ca < cb:
			return -1
		case ca > cb:
			return 1
		}
		return 0
	})
	if len(parts) > 2 {
		last := parts[len(parts)-1]
		parts = []*roaring.Bitmap{roaring.FastAnd(parts[:len(parts)-1]...), last}
	}
	ms.parts = parts
}

// card is the size of the set, counted without building it.
func (ms *matchSet) card() uint64 {
	if ms.counted {
		return ms.n
	}
	ms.counted = true
	switch {
	case ms.bm != nil:
		ms.n = ms.bm.GetCardinality()
	case membershipMode == membershipIntersect:
		ms.n = ms.set().GetCardinality()
	default:
		ms.reduce()
		if len(ms.parts) == 1 {
			ms.n = ms.parts[0].GetCardinality()
		} else {
			ms.n = ms.parts[0].AndCardinality(ms.parts[1])
		}
		if ms.minus != nil && ms.n > 0 {
			// The unlisted ones in it: few, taken from the smaller part.
			out := roaring.And(ms.minus, ms.parts[0])
			if len(ms.parts) == 2 {
				out.And(ms.parts[1])
			}
			ms.n -= out.GetCardinality()
		}
	}
	return ms.n
}

// contains says whether incident number x is in the set, asking each part.
func (ms *matchSet) contains(x uint32) bool {
	if ms.bm != nil {
		return ms.bm.Contains(x)
	}
	for _, p := range ms.parts {
		if !p.Contains(x) {
			return false
		}
	}
	return ms.minus == nil || !ms.minus.Contains(x)
}

// count is how many incidents of posting are in the set. Counts that
// read many postings (facets, years) build the set once, at the first.
func (ms *matchSet) count(posting *roaring.Bitmap) uint64 {
	if ms.all {
		return posting.GetCardinality()
	}
	return ms.set().AndCardinality(posting)
}

// owned is the set as a bitmap of the caller's own.
func (ms *matchSet) owned() *roaring.Bitmap {
	bm := ms.set()
	if !ms.own {
		return bm.Clone() // a posting: it points into the file
	}
	return bm
}

// Which way the walk of a large set's page tests membership.
const (
	membershipAuto      = iota // by the cost model (walksParts)
	membershipParts            // always ask each part
	membershipIntersect        // always build the set first
)

// membershipMode is membershipAuto but in tests (SetMembershipMode).
var membershipMode = membershipAuto

// A walk for a page of n of count matching incidents in a library of
// library incidents reads about (n+1)·library/count keys, and asks one
// more part for each; building the set costs about one step per element
// of its smallest part. Measured (BenchmarkWalkOrIntersect,
// docs/performance.md "Filtered pages"): containsPerElement is how many
// elements of the intersection one extra Contains costs.
const containsPerElement = 4

// walksParts says whether the page walk asks the parts rather than the
// set built first.
func (ms *matchSet) walksParts(n int, library uint64) bool {
	switch {
	case ms.bm != nil:
		return false
	case membershipMode == membershipParts:
		return true
	case membershipMode == membershipIntersect:
		return false
	}
	ms.reduce()
	if len(ms.parts) < 2 {
		return true
	}
	count := max(ms.card(), 1)
	steps := uint64(n+1) * library / count
	return steps*containsPerElement <= ms.parts[0].GetCardinality()
}
