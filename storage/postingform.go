package storage

import "github.com/RoaringBitmap/roaring/v2"

// The stored form of a posting. RunOptimize keeps a container as runs
// whenever the runs take fewer bytes than its bitmap, up to 2,047 runs in
// one container of 65,536 numbers. Every read that counts or asks a
// posting pays per run: AndCardinality of a run container against a
// bitmap one counts run by run (about 8.5 ns a run), a Contains is a
// binary search of the runs. The dated posting of a library where a few
// incidents in a hundred are undated, spread through the numbers, is cut
// into about a thousand runs a container: counting a symptom against it
// took 127 µs at 1,000,000 incidents, against 3.7 µs for the same
// posting as bitmap containers (BenchmarkPostingForm), and was 38% of the
// CPU of the date range + symptom page (docs/performance.md, "Filtered
// pages").
//
// So a posting whose run containers average more than a quarter of a
// bitmap container's 8 KiB (over 512 runs) is stored without runs, as
// bitmap (and array) containers: at most 4 times the bytes of its runs
// (2.2 times for that dated posting), for a count 35 times cheaper. The
// form is the store's choice alone: readers and check compare contents.

// runBytesPerBitmap bounds the average bytes of a posting's run
// containers, as a fraction of a bitmap container's 8,192: over 8,192 /
// runBytesPerBitmap it is stored without runs.
const runBytesPerBitmap = 4

// countsFast returns bm run-optimized, or, when its run containers are
// many-runned (runBytesPerBitmap), bm as array and bitmap containers
// only. It makes the dense copy only when it is small beside bm (at most
// 4 bits per member): a sparse posting of high numbers keeps its runs.
func countsFast(bm *roaring.Bitmap) *roaring.Bitmap {
	bm.RunOptimize()
	st := bm.Stats()
	if st.RunContainers == 0 || st.RunContainerBytes*runBytesPerBitmap <= st.RunContainers*8192 {
		return bm
	}
	if bm.DenseSize()*64 > 4*bm.GetCardinality() {
		return bm
	}
	return roaring.FromDense(bm.ToDense(), false)
}
