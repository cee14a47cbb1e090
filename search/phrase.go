package search

import (
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
	for li, s := range lead.p.docs {
		if in[s>>6]&(1<<(s&63)) == 0 {
			continue
		}
		lead.i = li
		all := true
		for j := 1; j < len(curs); j++ {
			if !curs[j].seek(s) {
				return out, true
			}
			if curs[j].p.docs[curs[j].i] != s {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		if freq := phraseFreq(t, curs); freq > 0 {
			out = append(out, match{s, float64(freq)})
		}
	}
	return out, true
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
