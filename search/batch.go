package search

import (
	"encoding/binary"
	"sync"

	"github.com/incidentlib/incidentlib"
)

// batchIndex is a run of consecutive changes of one catch-up step,
// analyzed and inverted by one worker: per term and field, the entries of
// its records, already encoded as postings hold them. Applying it costs
// one lookup and one copy per term rather than per term of every record,
// which leaves the serial part of a build short. Batches are pooled: the
// lists of the terms that recur keep their memory from batch to batch.
type batchIndex struct {
	idx   []int // the changes analyzed (not tombstones), ascending
	lens  [][numIFields]uint32
	terms map[string]*termLists
	usedT []batchUse

	toks    []token
	touched []*batchList // lists of the record being added
	tri     []byte       // a trigram term being made
}

type batchUse struct {
	term string
	f    ifield
	bl   *batchList
}

// batchList is a posting of a batch: entries by position in idx.
type batchList struct {
	docs []int32
	tfs  []uint8
	ends []uint32 // end of each entry in data
	data []byte
	cur  []uint32 // positions in the record being added
	in   int32    // 1 + the record cur belongs to
}

var batchPool = sync.Pool{New: func() any { return &batchIndex{terms: map[string]*termLists{}} }}

func getBatch() *batchIndex { return batchPool.Get().(*batchIndex) }

// release empties b and returns it to the pool.
func (b *batchIndex) release() {
	for _, u := range b.usedT {
		bl := u.bl
		bl.docs, bl.tfs, bl.ends, bl.data, bl.in = bl.docs[:0], bl.tfs[:0], bl.ends[:0], bl.data[:0], 0
	}
	b.idx, b.lens, b.usedT = b.idx[:0], b.lens[:0], b.usedT[:0]
	if len(b.terms) > 1<<18 { // a vocabulary this large is not worth keeping
		clear(b.terms)
	}
	batchPool.Put(b)
}

// addIncident analyzes inc, the record of change i, which follows every
// change added before.
func (b *batchIndex) addIncident(a *analyzer, i int, inc *incidentlib.Incident) {
	k := int32(len(b.idx)) + 1
	b.idx = append(b.idx, i)
	var lens [numIFields]uint32
	var base [numIFields]uint32
	b.touched = b.touched[:0]
	for fi := range fields {
		f := &fields[fi]
		text := f.text(inc)
		if text == "" {
			continue
		}
		b.toks = a.analyze(text, b.toks[:0])
		if len(b.toks) == 0 {
			continue
		}
		at := base[f.index]
		last := 0
		for i, t := range b.toks {
			tl := b.terms[t.Term]
			if tl == nil {
				tl = b.newTerm(t.Term)
			}
			b.add(tl, f.index, k, at+uint32(t.Position))
			last = max(last, t.Position)
			// The first syllable of a run of Hangul, at its first
			// bigram's place (see variants.go): 풀 of 풀이.
			if n, ok := hangulPair(t.Term); ok && (i == 0 || b.toks[i-1].End <= t.Start) {
				tl := b.terms[t.Term[:n]]
				if tl == nil {
					tl = b.newTerm(t.Term[:n])
				}
				b.add(tl, f.index, k, at+uint32(t.Position))
			}
			// The trigram of this bigram and the next (see trigramMark).
			if i+1 < len(b.toks) && b.toks[i+1].Position == t.Position+1 {
				var ok bool
				if b.tri, ok = appendTrigram(b.tri[:0], t.Term, b.toks[i+1].Term); ok {
					tl := b.terms[string(b.tri)]
					if tl == nil {
						tl = b.newTerm(string(b.tri))
					}
					b.add(tl, f.index, k, at+uint32(t.Position))
				}
			}
		}
		lens[f.index] += uint32(len(b.toks))
		base[f.index] = at + uint32(last) + fieldGap
	}
	b.lens = append(b.lens, lens)
	b.encode()
}

// termLists are a term's lists in a batch, by field.
type termLists struct {
	term  string
	lists [numIFields]*batchList
}

func (b *batchIndex) newTerm(term string) *termLists {
	tl := &termLists{term: term}
	b.terms[term] = tl
	return tl
}

// add records that tl's term stands at pos in field f of record k.
func (b *batchIndex) add(tl *termLists, f ifield, k int32, pos uint32) {
	bl := tl.lists[f]
	if bl == nil {
		bl = &batchList{}
		tl.lists[f] = bl
	}
	if bl.in != k {
		if len(bl.docs) == 0 && bl.in == 0 {
			b.usedT = append(b.usedT, batchUse{tl.term, f, bl})
		}
		bl.in = k
		bl.cur = bl.cur[:0]
		b.touched = append(b.touched, bl)
	}
	bl.cur = append(bl.cur, pos)
}

// encode appends to their lists the entries of the record just added.
func (b *batchIndex) encode() {
	k := int32(len(b.idx))
	for _, bl := range b.touched {
		pos := bl.cur
		bl.docs = append(bl.docs, k-1)
		bl.tfs = append(bl.tfs, uint8(min(len(pos), 255)))
		n := 0
		prev := uint32(0)
		for _, q := range pos {
			n += uvarintLen(uint64(q - prev))
			prev = q
		}
		bl.data = binary.AppendUvarint(bl.data, uint64(n))
		prev = 0
		for _, q := range pos {
			bl.data = binary.AppendUvarint(bl.data, uint64(q-prev))
			prev = q
		}
		bl.ends = append(bl.ends, uint32(len(bl.data)))
	}
}

// appendBatch appends the entries of bl, whose records got slots
// slotOf[idx[doc]], all above the slots p holds.
func (p *posting) appendBatch(bl *batchList, idx []int, slotOf []uint32) {
	base := uint32(len(p.data))
	start := uint32(0)
	for k, d := range bl.docs {
		if len(p.docs)%skipEvery == 0 {
			p.skips = append(p.skips, base+start)
		}
		p.docs = append(p.docs, slotOf[idx[d]])
		p.tfs = append(p.tfs, bl.tfs[k])
		start = bl.ends[k]
	}
	p.data = append(p.data, bl.data...)
}

// applyBatches applies changes, analyzed by batches (each a run of
// changes, in order), to m.
func (m *memIndex) applyBatches(changes []changeRef, batches []*batchIndex) {
	lensOf := make([]*[numIFields]uint32, len(changes))
	for _, b := range batches {
		for j, i := range b.idx {
			lensOf[i] = &b.lens[j]
		}
	}
	slotOf := make([]uint32, len(changes))
	for i, c := range changes {
		m.remove(c.num)
		if !c.deleted && lensOf[i] != nil {
			slotOf[i] = m.addSlot(c.num, c.seq, lensOf[i])
		}
	}
	for _, b := range batches {
		for _, u := range b.usedT {
			if len(u.bl.docs) == 0 {
				continue
			}
			tp := m.postings[u.term]
			if tp == nil {
				tp = &termPostings{}
				m.postings[u.term] = tp
			}
			p := tp[u.f]
			if p == nil {
				p = &posting{}
				tp[u.f] = p
			}
			p.appendBatch(u.bl, b.idx, slotOf)
		}
	}
}

// changeRef is a change as the index applies it.
type changeRef struct {
	num     uint32
	seq     uint64
	deleted bool
}
