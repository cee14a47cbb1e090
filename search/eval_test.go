package search

// The exhaustive evaluation: every match scored, then sorted. It is the
// reference that TestTopKMatchesExhaustive holds topK (topk.go) to, and
// is not used by the index itself.

import (
	bits64 "math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
)

// evalState is the scratch of one evaluation: per slot, how many
// clauses matched (or a mark) and the score so far. Only the slots in
// cands are ever set, so resetting costs as much as the result.
type evalState struct {
	state []uint8
	score []float64
	cands []uint32
	live  []uint32
	bits  []uint64
	ms    []match
	curs  []cursor
	pos   [][]uint32 // positions of each term of a phrase, in one slot
}

const (
	stRejected = 255 // dead, or not in the filter
	stExcluded = 254
)

var evalStates = sync.Pool{New: func() any { return &evalState{} }}

func (e *evalState) reset(n int) {
	if cap(e.state) < n {
		e.state = make([]uint8, n+n/4)
		e.score = make([]float64, n+n/4)
	}
	e.state = e.state[:n]
	e.score = e.score[:n]
	e.cands = e.cands[:0]
}

func (e *evalState) release() {
	for _, s := range e.cands {
		e.state[s] = 0
		e.score[s] = 0
	}
	e.cands = e.cands[:0]
	e.live = e.live[:0]
	evalStates.Put(e)
}

// evaluation is what eval found: the matching slots, with scores.
type evaluation struct {
	e     *evalState
	m     *memIndex
	must  uint8
	total int
}

// eval runs c over m, keeping only incidents in keep when it is not nil,
// and scores every match: the exhaustive ranking that topK (which serves
// searches) and matchNums (facets and years) must agree with, kept as the
// reference of TestTopKMatchesExhaustive. The caller holds m's read lock
// until it has read the result, then calls release.
//
// The rarest clause runs first over its whole postings; every later one
// only visits the slots still in the running (live, in slot order),
// skipping through its postings when they are much longer.
func eval(m *memIndex, c *compiled, keep *roaring.Bitmap) *evaluation {
	e := evalStates.Get().(*evalState)
	e.reset(len(m.slots))
	ev := &evaluation{e: e, m: m, must: uint8(len(c.must))}
	var keepBits []uint64
	if keep != nil {
		keepBits = keep.ToDense()
	}
	must := slices.Clone(c.must)
	sort.SliceStable(must, func(i, j int) bool { return m.clauseCost(&must[i]) < m.clauseCost(&must[j]) })
	for _, mt := range m.matches(e, &must[0], nil, true) {
		slot := mt.slot
		switch e.state[slot] {
		case 0:
			e.cands = append(e.cands, slot)
			sl := &m.slots[slot]
			if sl.seq == 0 || (keep != nil && (int(sl.num>>6) >= len(keepBits) || keepBits[sl.num>>6]&(1<<(sl.num&63)) == 0)) {
				e.state[slot] = stRejected
				continue
			}
			e.state[slot] = 1
			e.score[slot] = mt.s
		case 1:
			e.score[slot] += mt.s
		}
	}
	live := e.sortedLive(1, len(m.slots))
	for i := 1; i < len(must); i++ {
		at := uint8(i)
		for _, mt := range m.matches(e, &must[i], live, true) {
			switch e.state[mt.slot] {
			case at:
				e.state[mt.slot] = at + 1
				e.score[mt.slot] += mt.s
			case at + 1:
				e.score[mt.slot] += mt.s
			}
		}
		live = filterLive(e, live, at+1)
	}
	n := ev.must
	for i := range c.mustNot {
		for _, mt := range m.matches(e, &c.mustNot[i], live, false) {
			if e.state[mt.slot] == n {
				e.state[mt.slot] = stExcluded
			}
		}
	}
	if len(c.mustNot) > 0 {
		live = filterLive(e, live, n)
	}
	if c.bonus != nil {
		for _, mt := range m.matches(e, c.bonus, live, true) {
			if e.state[mt.slot] == n {
				e.score[mt.slot] += mt.s
			}
		}
	}
	ev.total = len(live)
	e.live = live
	return ev
}

// sortedLive returns the candidates in state st, in slot order: sorted
// when they are few, else read off a bitmap.
func (e *evalState) sortedLive(st uint8, slots int) []uint32 {
	live := e.live[:0]
	if len(e.cands) < slots/256 {
		for _, s := range e.cands {
			if e.state[s] == st {
				live = append(live, s)
			}
		}
		slices.Sort(live)
		return live
	}
	words := slots/64 + 1
	if cap(e.bits) < words {
		e.bits = make([]uint64, words)
	}
	bits := e.bits[:words]
	clear(bits)
	for _, s := range e.cands {
		if e.state[s] == st {
			bits[s>>6] |= 1 << (s & 63)
		}
	}
	for w, b := range bits {
		for b != 0 {
			live = append(live, uint32(w<<6+bits64.TrailingZeros64(b)))
			b &= b - 1
		}
	}
	return live
}

// filterLive keeps the slots of live in state st.
func filterLive(e *evalState, live []uint32, st uint8) []uint32 {
	out := live[:0]
	for _, s := range live {
		if e.state[s] == st {
			out = append(out, s)
		}
	}
	return out
}

// top returns hits offset to offset+size of the ranking: best score
// first, then the lower incident number.
func (ev *evaluation) top(offset, size int) []hit {
	k := offset + size
	if k == 0 {
		return nil
	}
	e, m := ev.e, ev.m
	// Every match sorted: the reference keeps no heap of its own.
	h := make([]hit, 0, len(e.live))
	for _, s := range e.live {
		h = append(h, hit{slot: s, num: m.slots[s].num, score: e.score[s]})
	}
	better := func(a, b hit) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.num < b.num
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	if offset >= len(h) {
		return nil
	}
	return h[offset:min(k, len(h))]
}

// set returns the incident numbers of every match.
func (ev *evaluation) set() *roaring.Bitmap {
	nums := make([]uint32, 0, ev.total)
	for _, s := range ev.e.live {
		nums = append(nums, ev.m.slots[s].num)
	}
	slices.Sort(nums)
	return roaring.BitmapOf(nums...)
}

func (ev *evaluation) release() { ev.e.release() }

// matches calls fn for every slot that matches c in each of its fields,
// with the BM25 score of the match in that field (if score). With lead,
// only the slots of lead (ascending) are looked at.
func (m *memIndex) matches(e *evalState, c *clauseQ, lead []uint32, score bool) []match {
	out := e.ms[:0]
	defer func() { e.ms = out[:0] }()
	n := max(m.live, 1)
	for _, lg := range c.legs {
		f := lg.f
		avg := float64(m.sumLen[f]) / float64(n)
		if avg == 0 {
			avg = 1
		}
		norm := bm25K1 * bm25B / avg
		base := bm25K1 * (1 - bm25B)
		lens := m.lens[f]
		if len(lg.terms) == 1 {
			p := m.posting(f, lg.terms[0])
			if p == nil {
				continue
			}
			w := c.boost * ifieldBoost[f] * idf(n, len(p.docs)) * (bm25K1 + 1)
			docs := p.docs
			tfs := p.tfs[:len(docs)]
			for i, slot := range docs {
				if _, in := slices.BinarySearch(lead, slot); lead != nil && !in {
					continue
				}
				s := 0.0
				if score {
					t := float64(tfs[i])
					s = w * t / (t + base + norm*float64(lens[slot]))
				}
				out = append(out, match{slot, s})
			}
			continue
		}
		from := len(out)
		var idfSum float64
		out, idfSum = m.phraseMatches(e, lg.terms, f, lead, out)
		if score {
			w := c.boost * ifieldBoost[f] * idfSum * (bm25K1 + 1)
			for i := from; i < len(out); i++ {
				t := out[i].s // the phrase's frequency
				out[i].s = w * t / (t + base + norm*float64(lens[out[i].slot]))
			}
		}
	}
	return out
}

// phraseMatches calls fn for every slot (of lead, when given) where the
// terms of c stand at their relative positions in field f, with how
// often.
func (m *memIndex) phraseMatches(e *evalState, terms []string, f ifield, lead []uint32, out []match) ([]match, float64) {
	curs, ok := m.phraseCursors(e.curs[:0], terms, f)
	defer func() { e.curs = curs[:0] }()
	if !ok {
		return out, 0
	}
	idfSum := 0.0
	n := max(m.live, 1)
	for _, cur := range curs {
		idfSum += idf(n, len(cur.p.docs))
	}
	// Drive by the shortest list of slots.
	sort.SliceStable(curs, func(i, j int) bool { return len(curs[i].p.docs) < len(curs[j].p.docs) })
	if lead == nil || len(lead) > len(curs[0].p.docs) {
		lead = curs[0].p.docs
	}
	if len(e.pos) < len(curs) {
		e.pos = make([][]uint32, len(curs))
	}
	for li := 0; li < len(lead); li++ {
		slot := lead[li]
		all := true
		for j := range curs {
			if !curs[j].seek(slot) {
				return out, idfSum
			}
			if d := curs[j].p.docs[curs[j].i]; d != slot {
				all = false
				// Skip the lead up to d.
				li = gallop(lead, li, d) - 1
				break
			}
		}
		if !all {
			continue
		}
		for j := range curs {
			e.pos[j] = curs[j].positions(e.pos[j][:0])
		}
		// Counted by binary search, not by phraseFreq's pointer walk.
		if freq := phraseFreqSearch(e.pos, curs); freq > 0 {
			out = append(out, match{slot, float64(freq)})
		}
	}
	return out, idfSum
}
