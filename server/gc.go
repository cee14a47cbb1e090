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
