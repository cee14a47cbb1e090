//go:build long

package search

import "testing"

// TestLongTiers: TestTiersMatchExhaustive on larger corpora of three
// other seeds (make test-long).
func TestLongTiers(t *testing.T) {
	for seed := uint64(2); seed <= 4; seed++ {
		tiersRandom(t, seed, 5000, 2000)
	}
}
