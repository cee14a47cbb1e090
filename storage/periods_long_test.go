//go:build long

package storage_test

import "testing"

// TestLongPeriodFilters: the period postings against brute force, 40
// rounds of 200 random writes (make test-long).
func TestLongPeriodFilters(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		periodsRandom(t, seed, 40, 200)
	}
}
