//go:build long

package storage_test

import "testing"

// TestSetFilterDifferentialLong is TestSetFilterDifferential larger: more
// incidents, seeds and rounds (make test-long).
func TestSetFilterDifferentialLong(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		differential(t, 2000, seed, 2500)
	}
}
