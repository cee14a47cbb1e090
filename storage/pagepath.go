package storage

// Which way a filtered page is found: sorted in memory from the sort keys
// of the whole set (memSeq), or by a walk of the order index that keeps
// the matching keys (indexSeq).
//
// The walk reads about (n+1)·library/count index keys for a page of n out
// of count matching incidents spread over the library; the sort reads
// count sort keys, makes their order keys and sorts them. Measured
// (BenchmarkPageCrossover, docs/performance.md "Filtered pages (issue
// 32)"), a sorted key costs 21 walked ones at 10,000 incidents (a set of
// 313: 286 µs sorted, 30 µs walked; a set of 50: 40 µs sorted, 216 µs
// walked) and 50 at 100,000 (a set of 83: 109 µs sorted, 4.3 ms walked;
// 301: 873 µs sorted, 409 µs walked). With 32 the sort wins when count² ·
// 32 is below (n+1) · library: up to about 80 incidents of 10,000 and 260
// of 100,000 for a page of 20, where the fixed bound sorted up to 4,096
// (a set of 3,036 of 100,000: 10.7 ms sorted, 135 µs walked).

// sortCostInSteps is what one key of the in-memory sort costs, in walked
// index keys.
const sortCostInSteps = 32

// pageCostModel is false when a test forces one way (SetSmallSet).
var pageCostModel = true

// sortsInMemory says whether the page of n of the count incidents of a
// filtered set, in a library of library incidents, is found cheaper by
// sorting the set in memory. smallSet bounds the sort in any case.
func sortsInMemory(count, n int, library uint64) bool {
	if count > smallSet {
		return false
	}
	if !pageCostModel {
		return true
	}
	return uint64(count)*uint64(count)*sortCostInSteps <= uint64(n+1)*library
}
