package main

import "math/rand/v2"

// Requests varied per request: a frontend sends its filter (a date
// picker's bounds) as variables, different from one request to the next,
// so neither a response cache nor anything keyed by the exact body helps.

// bodyList is the bodies t sends in turn: bodies, or body alone.
func (t loadTarget) bodyList() [][]byte {
	if len(t.bodies) > 0 {
		return t.bodies
	}
	return [][]byte{t.body}
}

// anyBody is one of t's bodies, drawn at random when there are several.
func (t loadTarget) anyBody() []byte {
	if len(t.bodies) > 0 {
		return t.bodies[rand.IntN(len(t.bodies))]
	}
	return t.body
}
