package server

import (
	"fmt"
	"runtime/debug"
)

// The garbage collector's budget, as serve --gc-percent sets it: how far,
// in percent of the heap that survived the last collection, the heap may
// grow before the next collection starts (the GOGC of the Go runtime).
const (
	// DefaultGCPercent is what serve runs with unless told otherwise.
	DefaultGCPercent = 100
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
