//go:build long

package storage_test

import "testing"

// TestLongRandomHistory: 1,000 random edits, reviews, deletes and restores
// (make test-long).
func TestLongRandomHistory(t *testing.T) { hsRandom(t, 1000) }
