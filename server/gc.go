package server

import (
	"fmt"
	"runtime/debug"
)

// The garbage collector's budget, as serve --gc-percent sets it: how far,
// in percent of the heap that survived the last collection, the heap may
// grow before the next collection starts (the GOGC of the Go runtime).
//
// GraphQL execution is allocation-heavy: a list page of 20 incidents with
// their relations allocates about 750 kB (12,500 objects) to answer 12 kB,
// while the live heap of a 10,000-incident library with every record
// decoded is about 40 MiB. The collector's work per request falls as the
// budget grows: with 32 concurrent list pages, the process's CPU time per
// request was 9.2 ms at 100%, 6.6 ms at 200%, 6.5 ms at 400% and 5.8 ms at
// 800% (go test -bench ListPageParallel, 2 CPUs). 400% keeps most of the
// gain for a heap that peaks near five times the live heap (about 200 MiB
// for 10,000 incidents); --memory-limit caps it where memory is short.
const (
	// DefaultGCPercent is what serve runs with unless told otherwise.
	DefaultGCPercent = 400
	// MinGCPercent and MaxGCPercent bound the setting: below 10 the
	// collector runs nearly all the time; above 10,000 the heap may grow
	// a hundredfold between collections.
	MinGCPercent = 10
	MaxGCPercent = 10_000
)

// SetGCPercent sets the garbage collector's budget and returns the
// previous one. It refuses values outside MinGCPercent..MaxGCPercent.
func SetGCPercent(percent int) (previous int, err error) {
	if percent < MinGCPercent || percent > MaxGCPercent {
		return 0, fmt.Errorf("the GC budget must be %d to %d percent, got %d", MinGCPercent, MaxGCPercent, percent)
	}
	return debug.SetGCPercent(percent), nil
}

// MinMemoryLimit is the lowest Go memory limit serve accepts. A limit
// below the heap the collector needs makes it collect without end and
// still not stay under it (seed 001: a limiter set below what the garbage
// collector needed under write load got the pods OOM-killed); 10,000
// incidents with the record cache take about 100 MiB of live heap.
const MinMemoryLimit = 256 << 20

// SetMemoryLimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) and returns the previous one; 0 leaves the
// runtime's own setting alone (GOMEMLIMIT, unlimited unless set). It
// refuses a limit below MinMemoryLimit. Set it below the
// container's limit with room for what Go does not count (stacks of cgo,
// the page cache of the mmapped store is not counted but is reclaimable).
func SetMemoryLimit(bytes int64) (previous int64, err error) {
	if bytes == 0 {
		return debug.SetMemoryLimit(-1), nil // -1 reads it
	}
	if bytes < MinMemoryLimit {
		return 0, fmt.Errorf("the memory limit must be 0 (none) or at least %d MiB, got %d bytes: below what the collector needs it collects without end and the process is killed anyway (seed 001)", MinMemoryLimit>>20, bytes)
	}
	return debug.SetMemoryLimit(bytes), nil
}
