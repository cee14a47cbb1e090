package cluster

import (
	"testing"
	"time"
)

// TestHearCoalescesBells: another node's bells wake the follower once,
// later (bellDelay), for the highest position told; a bell of a position
// this node knows (its own write's, which ring Nudged) wakes nothing.
func TestHearCoalescesBells(t *testing.T) {
	n := &Node{bell: make(chan struct{}, 1)}
	n.hear(5)
	n.hear(9)
	n.hear(7)
	if got := n.want.Load(); got != 0 {
		t.Fatalf("want is %d at once after the bells, want 0 until bellDelay passed", got)
	}
	select {
	case <-n.bell:
	case <-time.After(10 * time.Second):
		t.Fatal("the bells never woke the follower")
	}
	if got := n.want.Load(); got != 9 {
		t.Fatalf("want is %d after the bells, want 9 (the highest told)", got)
	}
	for n.hearing.Load() {
		time.Sleep(time.Millisecond) // the timer's function ends after its Nudge
	}
	n.hear(9) // this node knows it: no wake
	n.hear(4)
	if n.hearing.Load() {
		t.Fatal("a bell of a known position set a wake")
	}
	select {
	case <-n.bell:
		t.Fatal("a bell of a known position woke the follower")
	default:
	}
	n.Nudge(12) // this node's own write: at once
	select {
	case <-n.bell:
	default:
		t.Fatal("Nudge did not wake the follower at once")
	}
}
