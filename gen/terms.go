package gen

import (
	"math/rand/v2"
	"slices"
)

// The taxonomy terms of each incident, drawn with popular terms common.

var (
	domCount  = weights(70, 30)            // 1..2
	manyCount = weights(35, 35, 20, 10)    // 1..4
	conCount  = weights(30, 35, 25, 10)    // 0..3
	relCount  = weights(40, 30, 18, 12)    // 0..3
	itemCount = weights(30, 30, 20, 12, 8) // 0..4
)

// pickTerms draws k distinct popular-skewed terms of a kind.
func (kt *kindTerms) pickTerms(r *rand.Rand, k int) []int {
	k = min(k, len(kt.terms))
	if k <= 0 {
		return nil
	}
	out := make([]int, 0, k)
	for tries := 0; len(out) < k && tries < 60; tries++ {
		if t := kt.pick.pick(r); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for t := 0; len(out) < k; t++ {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func (kt *kindTerms) pickOne(r *rand.Rand) int {
	if len(kt.terms) == 0 {
		return -1
	}
	return kt.pick.pick(r)
}

// terms draws the terms of every incident, targets of recurrences first so
// that a recurrence can share its target's root cause and main component.
func (g *generator) terms() {
	r := g.rng(streamTerms)
	g.tm = make([]recTerms, g.n)
	for _, i := range g.order {
		t := &g.tm[i]
		t.dom = g.kinds[kDomain].pickTerms(r, 1+domCount.pick(r))
		t.sym = g.kinds[kSymptom].pickTerms(r, 1+manyCount.pick(r))
		t.comp = g.kinds[kComponent].pickTerms(r, 1+manyCount.pick(r))
		t.con = g.kinds[kContributing].pickTerms(r, conCount.pick(r))
		t.rc = g.kinds[kRootCause].pickOne(r)
		t.sev = g.kinds[kSeverity].pickOne(r)
		if p := g.rec[i]; p >= 0 {
			pt := &g.tm[p]
			t.rc = pt.rc
			if len(pt.comp) > 0 && !slices.Contains(t.comp, pt.comp[0]) {
				t.comp = append([]int{pt.comp[0]}, t.comp...)
				t.comp = t.comp[:min(len(t.comp), 4)]
			}
		}
	}
}

func (kt *kindTerms) slugs(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	out := make([]string, len(idx))
	for n, i := range idx {
		out[n] = kt.terms[i].Slug
	}
	return out
}

func (kt *kindTerms) slug(i int) string {
	if i < 0 {
		return ""
	}
	return kt.terms[i].Slug
}

// label returns the labels of term idx[n], or def when there is none.
func (kt *kindTerms) label(idx []int, n int, def pair) [2]string {
	if n >= len(idx) {
		return [2]string{def.en, def.ko}
	}
	return [2]string{kt.en[idx[n]], kt.ko[idx[n]]}
}
