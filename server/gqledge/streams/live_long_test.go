//go:build long

package streams_test

import "testing"

// TestSubscriptionResumeLong is TestSubscriptionResume over 10,000 writes
// (`make test-long`).
func TestSubscriptionResumeLong(t *testing.T) { testResume(t, 10000) }
