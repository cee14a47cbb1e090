package search

import (
	"math"
	bits64 "math/bits"
	"slices"
	"sort"
	"sync"
)

// The page of a search is computed by topK, which gives the same hits,
// scores and order as ranking every match (eval and top, which facets and
// years still use, and which the tests compare it with), for less work:
//
//   - The matches are found with bitsets of slots: a word is the union of
//     its postings over the clause's fields, the clauses are intersected,
//     dead slots, the filter and the exclusions are cleared. No score is
//     computed for that, and the count of matches is the bitset's.
//   - A phrase that must match is checked by positions only for the slots
//     still in the set (its count must be exact).
//   - Scores are summed term at a time into a dense array, in the order
//     eval sums them (clauses by cost, then fields), so they are equal to
//     the last bit.
//   - The title-phrase bonus only changes the order, not the set: it is
//     checked only for the slots whose score plus an upper bound of the
//     bonus (from the title's length and the smallest frequency of the
//     phrase's terms there) can still enter the page, best bound first.

// topState is the reusable scratch of topK.
type topState struct {
	set   []uint64 // the matches
	tmp   []uint64 // one clause's slots
	rest  []uint64 // slots a phrase is still checked in (matchOpts.countOnly)
	bonus []uint64 // slots the bonus may apply to
	score []float64
	ub    []float64 // upper bound of the bonus, by slot
	ms    []match
	hits  [][]match // phrase matches of must clauses, by clause and field
	curs  []cursor
	pos   [][]uint32
	heap  []hit
	cands []bound
	must  []clauseQ
	// stride is how many legs' phrase matches hits holds per clause.
	stride int
	order  []int      // the place in c.must of each clause of must
	costs  []int      // the cost of each clause of must
	own    [][]uint64 // candidates by must clause (matchOpts.keepOwn)
}

type bound struct {
	ub   float64
	slot uint32
}

var topStates = sync.Pool{New: func() any { return &topState{} }}

// boundSlack makes float rounding of bounds harmless: a bound is raised
// by this relative amount before it is compared.
const boundSlack = 1e-9

func (t *topState) resize(words, slots int) {
	grow := func(b []uint64) []uint64 {
		if cap(b) < words {
			return make([]uint64, words, words+words/4)
		}
		b = b[:words]
		clear(b)
		return b
	}
	t.set, t.tmp, t.bonus, t.rest = grow(t.set), grow(t.tmp), grow(t.bonus), grow(t.rest)
	if cap(t.score) < slots {
		t.score = make([]float64, slots, slots+slots/4)
		t.ub = make([]float64, slots, slots+slots/4)
	}
	t.score, t.ub = t.score[:slots], t.ub[:slots]
}

func has(b []uint64, s uint32) bool { return b[s>>6]&(1<<(s&63)) != 0 }

// bm25 holds what scoring a field needs.
type bm25 struct {
	norm, base float64
	lens       []uint32
}

func (m *memIndex) bm25Of(f ifield) bm25 {
	n := max(m.live, 1)
	avg := float64(m.sumLen[f]) / float64(n)
	if avg == 0 {
		avg = 1
	}
	return bm25{norm: bm25K1 * bm25B / avg, base: bm25K1 * (1 - bm25B), lens: m.lens[f]}
}

// topK returns hits offset to offset+size of the ranking of c over m
// (keep, when not nil, as for eval) and how many incidents match. The
// caller holds m's read lock.
func topK(m *memIndex, c *compiled, keep []uint64, offset, size int) ([]hit, int) {
	t := topStates.Get().(*topState)
	defer topStates.Put(t)
	return t.topK(m, c, keep, matchOpts{}, offset, size)
}

// rankTiers is topK for a query with translations (glossary.go): the hits
// of the query without them (c.direct) first, in their ranking, then the
// hits only the translations find, in theirs; the count is of both, and
// direct is how many of the hits returned are of the first tier.
func rankTiers(m *memIndex, c *compiled, keep []uint64, offset, size int) (hits []hit, total, direct int) {
	if c.direct == nil {
		hits, total = topK(m, c, keep, offset, size)
		return hits, total, len(hits)
	}
	t0 := topStates.Get().(*topState)
	defer topStates.Put(t0)
	hits, n0 := t0.topK(m, c.direct, keep, matchOpts{keepOwn: true}, offset, size)
	hits = slices.Clip(hits)
	// t0.set holds the direct matches now: the second tier leaves them
	// out, and its clauses' own words' candidates are t0.own. When the
	// first tier filled the page, the second is only counted.
	t1 := topStates.Get().(*topState)
	defer topStates.Put(t1)
	o := matchOpts{exclude: t0.set, own: t0.own, countOnly: size == len(hits)}
	off1 := max(0, offset-n0)
	if o.countOnly {
		off1 = 0
	}
	more, n1 := t1.topK(m, c, keep, o, off1, size-len(hits))
	return append(hits, more...), n0 + n1, len(hits)
}

// topK is topK with t as scratch, the matches as o says (o.countOnly
// only when offset+size is 0); t.set holds the matches after it.
func (t *topState) topK(m *memIndex, c *compiled, keep []uint64, o matchOpts, offset, size int) ([]hit, int) {
	must, total := t.matches(m, c, keep, o)
	set := t.set
	k := offset + size
	if k == 0 || total == 0 {
		return nil, total
	}

	// Scores, summed as eval sums them.
	score := t.score
	for i := range must {
		cl := &must[i]
		for kf, lg := range cl.legs {
			f := lg.f
			bm := m.bm25Of(f)
			if len(lg.find) == 1 {
				p := m.posting(f, lg.find[0])
				if p == nil {
					continue
				}
				// A trigram's frequency is its bigram phrase's; the idf
				// is the phrase's (for a word, idf(n, len(p.docs))).
				w := cl.boost * ifieldBoost[f] * m.phraseIDF(lg.terms, f) * (bm25K1 + 1)
				tfs := p.tfs[:len(p.docs)]
				add := func(j int, s uint32) {
					tf := float64(tfs[j])
					score[s] += w * tf / (tf + bm.base + bm.norm*float64(bm.lens[s]))
				}
				if sparseRatio != 0 && total*sparseRatio < len(p.docs) {
					// Few matches against a long posting: each is
					// sought in it.
					seekEach(p.docs, set, add)
					continue
				}
				for j, s := range p.docs {
					if set[s>>6]&(1<<(s&63)) != 0 {
						add(j, s)
					}
				}
				continue
			}
			hs := t.hits[i*t.stride+kf]
			if len(hs) == 0 {
				continue
			}
			w := cl.boost * ifieldBoost[f] * m.phraseIDF(lg.terms, f) * (bm25K1 + 1)
			for _, mt := range hs {
				if s := mt.slot; set[s>>6]&(1<<(s&63)) != 0 {
					tf := mt.s
					score[s] += w * tf / (tf + bm.base + bm.norm*float64(bm.lens[s]))
				}
			}
		}
	}

	// Upper bounds of the bonus.
	bon := t.bonus
	if c.bonus != nil {
		for _, f := range c.bonus.fields {
			m.bonusBounds(t, c.bonus, f, set)
		}
		if m.bonusExactly(t, c.bonus) {
			// Too many slots may get the bonus for checking them one at a
			// time: the phrase is found in all of them in one pass, its
			// bonus added as the loop below would add it, and no slot
			// is left to bound.
			for _, f := range c.bonus.fields {
				var ok bool
				if t.ms, ok = m.phraseIn(t, c.bonus.terms, f, bon, t.ms[:0]); !ok {
					continue
				}
				bm := m.bm25Of(f)
				w := c.bonus.boost * ifieldBoost[f] * m.phraseIDF(c.bonus.terms, f) * (bm25K1 + 1)
				for _, mt := range t.ms {
					tf := mt.s
					score[mt.slot] += w * tf / (tf + bm.base + bm.norm*float64(bm.lens[mt.slot]))
				}
			}
			for w, b := range bon {
				for b != 0 {
					t.ub[w<<6+bits64.TrailingZeros64(b)] = 0
					b &= b - 1
				}
				bon[w] = 0
			}
		}
	}

	// The best k without the bonus, then the slots the bonus may lift.
	better := func(a, b hit) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.num < b.num
	}
	h := t.heap[:0]
	push := func(x hit) {
		if len(h) < k {
			h = append(h, x)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[p], h[i] = h[i], h[p]
				i = p
			}
			return
		}
		if !better(x, h[0]) {
			return
		}
		h[0] = x
		for i := 0; ; {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			if r := l + 1; r < len(h) && better(h[l], h[r]) {
				l = r
			}
			if !better(h[i], h[l]) {
				return
			}
			h[i], h[l] = h[l], h[i]
			i = l
		}
	}
	cands := t.cands[:0]
	for w, b := range set {
		for b != 0 {
			s := uint32(w<<6 + bits64.TrailingZeros64(b))
			b &= b - 1
			if c.bonus != nil && has(bon, s) {
				ub := score[s] + t.ub[s]
				cands = append(cands, bound{ub: ub + math.Abs(ub)*boundSlack, slot: s})
				continue
			}
			x := score[s]
			score[s] = 0
			if len(h) == k && x < h[0].score {
				continue
			}
			push(hit{slot: s, num: m.slots[s].num, score: x})
		}
	}
	if len(cands) > 0 {
		// A max-heap of the bounds, popped while the best bound could
		// still enter the page.
		less := func(i, j int) bool { return cands[i].ub > cands[j].ub }
		down := func(i int) {
			for {
				l := 2*i + 1
				if l >= len(cands) {
					return
				}
				if r := l + 1; r < len(cands) && less(r, l) {
					l = r
				}
				if !less(l, i) {
					return
				}
				cands[i], cands[l] = cands[l], cands[i]
				i = l
			}
		}
		for i := len(cands)/2 - 1; i >= 0; i-- {
			down(i)
		}
		for len(cands) > 0 {
			top := cands[0]
			if len(h) == k && top.ub < h[0].score {
				break
			}
			cands[0] = cands[len(cands)-1]
			cands = cands[:len(cands)-1]
			down(0)
			s := top.slot
			x := hit{slot: s, num: m.slots[s].num, score: score[s]}
			for _, f := range c.bonus.fields {
				if freq := m.phraseFreqAt(t, c.bonus.terms, f, s); freq > 0 {
					bm := m.bm25Of(f)
					w := c.bonus.boost * ifieldBoost[f] * m.phraseIDF(c.bonus.terms, f) * (bm25K1 + 1)
					tf := float64(freq)
					x.score += w * tf / (tf + bm.base + bm.norm*float64(bm.lens[s]))
				}
			}
			push(x)
		}
	}
	t.cands = cands[:0]
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	var out []hit
	if offset < len(h) {
		out = slices.Clone(h[offset:])
	}
	t.heap = h[:0]
	// The scores left are the bonus candidates'.
	for w, b := range bon {
		for b != 0 {
			s := w<<6 + bits64.TrailingZeros64(b)
			b &= b - 1
			score[s], t.ub[s] = 0, 0
		}
	}
	return out, total
}

// bonusPassRatio decides how the title-phrase bonus is checked: one slot
// at a time, best bound first (a few binary searches each, stopping once
// no bound can reach the page), unless the slots that may get it are more
// than 1/bonusPassRatio of the rarest term's postings, which one pass
// through the postings reads faster. Tests set it to force either way.
var bonusPassRatio = 8

// bonusExactly says whether topK checks the bonus c in one pass over
// every slot of t.bonus rather than one slot at a time.
func (m *memIndex) bonusExactly(t *topState, c *clauseQ) bool {
	n := 0
	for _, b := range t.bonus {
		n += bits64.OnesCount64(b)
	}
	if n == 0 {
		return false
	}
	lead := 0
	for _, f := range c.fields {
		if p := m.rarest(c.find, f); p != nil {
			lead += len(p.docs)
		}
	}
	return n*bonusPassRatio >= lead
}

// bonusBounds marks in t.bonus the slots of set whose field f holds every
// term of the bonus phrase, and adds to t.ub an upper bound of the
// bonus's score there: the phrase occurs at most as often as its rarest
// term in the slot.
func (m *memIndex) bonusBounds(t *topState, c *clauseQ, f ifield, set []uint64) {
	ps := m.postingsOf(c.terms, f, nil)
	if len(ps) == 0 {
		return
	}
	bm := m.bm25Of(f)
	w := c.boost * ifieldBoost[f] * m.phraseIDF(c.terms, f) * (bm25K1 + 1)
	var idx [maxQueryClauses * 4]int
	if len(ps) > len(idx) {
		// Too many terms to track: bound every slot of the set that holds
		// the rarest term by its frequency.
		ps = ps[:1]
	}
lead:
	for li, s := range ps[0].docs {
		if set[s>>6]&(1<<(s&63)) == 0 {
			continue
		}
		tf := ps[0].tfs[li]
		for j := 1; j < len(ps); j++ {
			idx[j] = gallop(ps[j].docs, idx[j], s)
			if idx[j] == len(ps[j].docs) {
				break lead
			}
			if ps[j].docs[idx[j]] != s {
				continue lead
			}
			tf = min(tf, ps[j].tfs[idx[j]])
		}
		t.bonus[s>>6] |= 1 << (s & 63)
		if tf == 255 || len(ps) == 1 && len(c.terms) > len(idx) {
			// The frequency was capped (or not tracked): no bound.
			t.ub[s] = math.Inf(1)
			continue
		}
		x := float64(tf)
		t.ub[s] += w * x / (x + bm.base + bm.norm*float64(bm.lens[s]))
	}
}

// postingsOf appends to buf the postings in f of the terms ts ("" skipped),
// rarest first; none when one of them is not in f.
func (m *memIndex) postingsOf(ts []string, f ifield, buf []*posting) []*posting {
	for _, term := range ts {
		if term == "" {
			continue
		}
		p := m.posting(f, term)
		if p == nil {
			return buf[:0]
		}
		buf = append(buf, p)
	}
	slices.SortStableFunc(buf, func(a, b *posting) int { return len(a.docs) - len(b.docs) })
	return buf
}
