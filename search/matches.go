package search

import (
	bits64 "math/bits"
	"slices"
	"sort"
)

// The matches of a query as bitsets of slots, topK's first step (see
// topk.go), and the incident numbers of every match for facets and years.

// legSlots sets in dst the slots that hold the term of one of the legs
// of a clause, or, for a phrase, its rarest term in a field that holds
// every term (a superset that phraseIn narrows down); when in is not nil,
// only the slots of in matter (n of them, as for orIn).
func (m *memIndex) legSlots(legs []leg, dst, in []uint64, n int) {
	for _, lg := range legs {
		if lead := m.rarest(lg.find, lg.f); lead != nil {
			orIn(lead.docs, in, dst, n)
		}
	}
}

// rarest returns the shortest posting in f of the terms ("" skipped), nil
// if one of them is not in f (or none is given).
func (m *memIndex) rarest(terms []string, f ifield) *posting {
	var lead *posting
	for _, t := range terms {
		if t == "" {
			continue
		}
		p := m.posting(f, t)
		if p == nil {
			return nil
		}
		if lead == nil || len(p.docs) < len(lead.docs) {
			lead = p
		}
	}
	return lead
}

// matchOpts says what matches leaves out and keeps beyond the set.
type matchOpts struct {
	// exclude, when not nil, holds slots left out of the set.
	exclude []uint64
	// countOnly: only the set is wanted, no scores. A phrase leg is then
	// checked only in the slots no other leg of its clause matched, and
	// t.hits is not left complete.
	countOnly bool
	// keepOwn keeps in t.own, by must clause (c.must's order), the slots
	// of its candidates, for a matches of the query with translations
	// whose direct query this is (rankTiers).
	keepOwn bool
	// own, when not nil, are those candidates of c.direct's must clauses
	// (a t.own kept by keepOwn): clause i's first len(c.direct.must[i].legs)
	// legs, the same as the direct clause's, are not read again.
	own [][]uint64
}

// matches sets t.set to the slots that match c (keep as for topK; the
// slots set in o.exclude left out) and returns the must clauses in the
// order their scores are summed, and how many slots match. Unless
// o.countOnly, the phrase matches of the must clauses stay in t.hits.
func (t *topState) matches(m *memIndex, c *compiled, keep []uint64, o matchOpts) ([]clauseQ, int) {
	words := len(m.slots)/64 + 1
	t.resize(words, len(m.slots))
	set, tmp := t.set, t.tmp
	exclude := o.exclude

	// The clauses by cost; order[i] is the place in c.must of must[i].
	t.order = t.order[:0]
	for i := range c.must {
		t.order = append(t.order, i)
	}
	t.must = append(t.must[:0], c.must...)
	must, order := t.must, t.order
	costs := t.costs[:0]
	for i := range must {
		costs = append(costs, m.clauseCost(&must[i]))
	}
	t.costs = costs
	sort.Stable(byCost{must, order, costs})
	if o.keepOwn {
		for len(t.own) < len(must) {
			t.own = append(t.own, nil)
		}
	}

	// Candidates: every clause (a phrase: its rarest term, for now).
	for i := range must {
		dst := set
		if i > 0 {
			dst = tmp
			clear(tmp)
		}
		// After the first clause only the slots still in the set
		// matter, unless the candidates are kept for a second tier.
		var in []uint64
		n := -1
		if i > 0 && !o.keepOwn {
			in, n = set, onesIn(set)
		}
		if o.own != nil && c.direct != nil {
			// The direct clause's legs come first: their candidates
			// are known.
			j := order[i]
			copy(dst, o.own[j])
			m.legSlots(must[i].legs[len(c.direct.must[j].legs):], dst, in, n)
		} else {
			m.legSlots(must[i].legs, dst, in, n)
		}
		if o.keepOwn {
			j := order[i]
			t.own[j] = append(t.own[j][:0], dst...)
		}
		if i > 0 {
			for w := range set {
				set[w] &= tmp[w]
			}
		}
	}
	if c.all {
		// Every slot (the dead ones go below), none scored.
		for w := range set {
			set[w] = ^uint64(0)
		}
		if r := len(m.slots) & 63; r != 0 {
			set[len(m.slots)>>6] = 1<<r - 1
		} else {
			set[len(m.slots)>>6] = 0
		}
	}
	if exclude != nil {
		for w := range set {
			set[w] &^= exclude[w]
		}
	}
	// Dead slots and the filter.
	for w, b := range set {
		if m.dead == 0 && keep == nil {
			break
		}
		for b != 0 {
			s := uint32(w<<6 + bits64.TrailingZeros64(b))
			b &= b - 1
			sl := &m.slots[s]
			if sl.seq == 0 || (keep != nil && (int(sl.num>>6) >= len(keep) || keep[sl.num>>6]&(1<<(sl.num&63)) == 0)) {
				set[w] &^= 1 << (s & 63)
			}
		}
	}
	// Exclusions.
	for i := range c.mustNot {
		cl := &c.mustNot[i]
		for _, lg := range cl.legs {
			if len(lg.find) == 1 {
				if p := m.posting(lg.f, lg.find[0]); p != nil {
					for _, s := range p.docs {
						set[s>>6] &^= 1 << (s & 63)
					}
				}
				continue
			}
			t.ms, _ = m.phraseIn(t, lg.find, lg.f, set, t.ms[:0])
			for _, mt := range t.ms {
				set[mt.slot>>6] &^= 1 << (mt.slot & 63)
			}
		}
	}
	// Phrases that must match, by positions, only in the set; a clause
	// with a phrase among its legs matches where one of its legs does.
	t.stride = 0
	for i := range must {
		t.stride = max(t.stride, len(must[i].legs))
	}
	for len(t.hits) < len(must)*t.stride {
		t.hits = append(t.hits, nil)
	}
	for i := range must {
		cl := &must[i]
		phrase := false
		for _, lg := range cl.legs {
			phrase = phrase || len(lg.find) > 1
		}
		if !phrase {
			continue
		}
		clear(tmp)
		// The words first, then the phrases: counting, a phrase is
		// checked only where nothing else of the clause matched. Only
		// the slots of set matter (set is narrowed to tmp).
		n := -1 // slots in set, counted when a long posting asks
		for _, lg := range cl.legs {
			if len(lg.find) == 1 {
				if p := m.posting(lg.f, lg.find[0]); p != nil {
					if len(p.docs) > len(set) && n < 0 {
						n = onesIn(set)
					}
					orIn(p.docs, set, tmp, n)
				}
			}
		}
		for k, lg := range cl.legs {
			if len(lg.find) == 1 {
				continue
			}
			in := set
			if o.countOnly {
				in = t.rest
				left := uint64(0)
				for w := range set {
					in[w] = set[w] &^ tmp[w]
					left |= in[w]
				}
				if left == 0 {
					break
				}
			}
			h := &t.hits[i*t.stride+k]
			*h, _ = m.phraseIn(t, lg.find, lg.f, in, (*h)[:0])
			for _, mt := range *h {
				tmp[mt.slot>>6] |= 1 << (mt.slot & 63)
			}
		}
		for w := range set {
			set[w] &= tmp[w]
		}
	}
	total := 0
	for _, b := range set {
		total += bits64.OnesCount64(b)
	}
	return must, total
}

// matchNums returns the incident numbers of every match of c, ascending.
func matchNums(m *memIndex, c *compiled, keep []uint64) []uint32 {
	t := topStates.Get().(*topState)
	defer topStates.Put(t)
	_, total := t.matches(m, c, keep, matchOpts{countOnly: true})
	nums := make([]uint32, 0, total)
	for w, b := range t.set {
		for b != 0 {
			s := w<<6 + bits64.TrailingZeros64(b)
			b &= b - 1
			nums = append(nums, m.slots[s].num)
		}
	}
	slices.Sort(nums)
	return nums
}

// byCost sorts must clauses by their cost, their places in c.must along.
type byCost struct {
	must  []clauseQ
	order []int
	costs []int
}

func (b byCost) Len() int           { return len(b.must) }
func (b byCost) Less(i, j int) bool { return b.costs[i] < b.costs[j] }
func (b byCost) Swap(i, j int) {
	b.must[i], b.must[j] = b.must[j], b.must[i]
	b.order[i], b.order[j] = b.order[j], b.order[i]
	b.costs[i], b.costs[j] = b.costs[j], b.costs[i]
}

// onesIn counts the slots of set.
func onesIn(set []uint64) int {
	n := 0
	for _, b := range set {
		n += bits64.OnesCount64(b)
	}
	return n
}

// orIn sets in dst the slots of docs (ascending) that set holds, and
// maybe others of docs: set holds n slots (negative when not counted).
// When they are few against docs, each is sought in docs (gallop) rather
// than docs read through.
func orIn(docs []uint32, set, dst []uint64, n int) {
	if n < 0 || sparseRatio == 0 || n*sparseRatio >= len(docs) {
		for _, s := range docs {
			dst[s>>6] |= 1 << (s & 63)
		}
		return
	}
	seekEach(docs, set, func(_ int, s uint32) { dst[s>>6] |= 1 << (s & 63) })
}

// seekEach calls fn with the index in docs (ascending) and the slot of
// each slot of set that docs holds, in slot order, seeking each one.
func seekEach(docs []uint32, set []uint64, fn func(i int, s uint32)) {
	i := 0
	for w, b := range set {
		for b != 0 {
			s := uint32(w<<6 + bits64.TrailingZeros64(b))
			b &= b - 1
			if i = gallop(docs, i, s); i == len(docs) {
				return
			}
			if docs[i] == s {
				fn(i, s)
			}
		}
	}
}
