package search

import (
	bits64 "math/bits"
	"slices"
	"sort"
)

// Phrases: their idf, and their frequency in a slot from the terms'
// positions, for phrases that must match and the title-phrase bonus.

// phraseIDF is the sum of the idfs of the phrase's terms in f, as
// phraseMatches sums them.
func (m *memIndex) phraseIDF(terms []string, f ifield) float64 {
	n := max(m.live, 1)
	sum := 0.0
	for _, t := range terms {
		if t == "" {
			continue
		}
		p := m.posting(f, t)
		if p == nil {
			return 0
		}
		sum += idf(n, len(p.docs))
	}
	return sum
}

// phraseCursors appends to curs a cursor on the posting in f of each term
// of the phrase ("" where any term may stand is skipped, its place kept in
// rel); false when a term is not in f or the phrase has no term.
func (m *memIndex) phraseCursors(curs []cursor, terms []string, f ifield) ([]cursor, bool) {
	for rel, term := range terms {
		if term == "" {
			continue
		}
		p := m.posting(f, term)
		if p == nil {
			return curs, false
		}
		curs = append(curs, cursor{p: p, rel: rel})
	}
	return curs, len(curs) > 0
}

// phraseIn appends the slots of in where the phrase stands in f, with its
// frequency, in slot order.
func (m *memIndex) phraseIn(t *topState, terms []string, f ifield, in []uint64, out []match) ([]match, bool) {
	curs, ok := m.phraseCursors(t.curs[:0], terms, f)
	defer func() { t.curs = curs[:0] }()
	if !ok {
		return out, false
	}
	sort.SliceStable(curs, func(i, j int) bool { return len(curs[i].p.docs) < len(curs[j].p.docs) })
	for len(t.pos) < len(curs) {
		t.pos = append(t.pos, nil)
	}
	lead := &curs[0]
	// at checks slot s, at entry li of the lead; false once a posting
	// ends.
	at := func(li int, s uint32) bool {
		lead.i = li
		for j := 1; j < len(curs); j++ {
			if !curs[j].seek(s) {
				return false
			}
			if curs[j].p.docs[curs[j].i] != s {
				return true
			}
		}
		if freq := phraseFreq(t, curs); freq > 0 {
			out = append(out, match{s, float64(freq)})
		}
		return true
	}
	if sparse(in, len(lead.p.docs)) {
		// Few slots to check: each is sought in the lead's posting.
		li := 0
		for w, b := range in {
			for b != 0 {
				s := uint32(w<<6 + bits64.TrailingZeros64(b))
				b &= b - 1
				if li = gallop(lead.p.docs, li, s); li == len(lead.p.docs) {
					return out, true
				}
				if lead.p.docs[li] == s && !at(li, s) {
					return out, true
				}
			}
		}
		return out, true
	}
	for li, s := range lead.p.docs {
		if in[s>>6]&(1<<(s&63)) == 0 {
			continue
		}
		if !at(li, s) {
			return out, true
		}
	}
	return out, true
}

// sparseRatio: the slots of a set are sought one by one in a posting
// when they are fewer than 1/sparseRatio of its entries, rather than the
// posting read through. Tests set it to force either way.
var sparseRatio = 4

// sparse says whether the set in has fewer than n/sparseRatio slots.
func sparse(in []uint64, n int) bool {
	if n <= len(in) || sparseRatio == 0 {
		return false // counting the set costs as much as reading the posting
	}
	limit := n / sparseRatio
	c := 0
	for _, b := range in {
		if c += bits64.OnesCount64(b); c >= limit {
			return false
		}
	}
	return true
}

// phraseFreq counts the phrase in the entries the cursors stand on.
func phraseFreq(t *topState, curs []cursor) int {
	for j := range curs {
		t.pos[j] = curs[j].positions(t.pos[j][:0])
	}
	// Positions ascend: one pointer per term walks forward.
	var at [8]int
	if len(curs) > len(at) {
		return phraseFreqSearch(t.pos, curs)
	}
	freq := 0
	rel0 := curs[0].rel
next:
	for _, p0 := range t.pos[0] {
		start := int(p0) - rel0
		for j := 1; j < len(curs); j++ {
			want := start + curs[j].rel
			if want < 0 {
				continue next
			}
			ps := t.pos[j]
			i := at[j]
			for i < len(ps) && int(ps[i]) < want {
				i++
			}
			at[j] = i
			if i == len(ps) {
				return freq
			}
			if int(ps[i]) != want {
				continue next
			}
		}
		freq++
	}
	return freq
}

// phraseFreqSearch counts the phrase in the positions pos of its terms
// (as phraseFreq, by binary search: for any number of terms).
func phraseFreqSearch(pos [][]uint32, curs []cursor) int {
	freq := 0
	for _, p0 := range pos[0] {
		start := int(p0) - curs[0].rel
		ok := true
		for j := 1; j < len(curs) && ok; j++ {
			want := start + curs[j].rel
			if want < 0 {
				ok = false
				break
			}
			_, ok = slices.BinarySearch(pos[j], uint32(want))
		}
		if ok {
			freq++
		}
	}
	return freq
}

// phraseFreqAt counts the phrase in field f of slot s.
func (m *memIndex) phraseFreqAt(t *topState, terms []string, f ifield, s uint32) int {
	curs, ok := m.phraseCursors(t.curs[:0], terms, f)
	defer func() { t.curs = curs[:0] }()
	if !ok {
		return 0
	}
	for j := range curs {
		c := &curs[j]
		c.i, _ = slices.BinarySearch(c.p.docs, s)
		if c.i == len(c.p.docs) || c.p.docs[c.i] != s {
			return 0
		}
	}
	for len(t.pos) < len(curs) {
		t.pos = append(t.pos, nil)
	}
	return phraseFreq(t, curs)
}
