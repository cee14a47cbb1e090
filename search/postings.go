package search

import (
	"encoding/binary"
	"math"
	"slices"
)

// BM25 parameters, as in Lucene and bleve.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// hit is one incident of a ranking: its slot, its number and its score.
type hit struct {
	slot  uint32
	num   uint32
	score float64
}

// clauseCost estimates the work of a clause: the entries it reads.
func (m *memIndex) clauseCost(c *clauseQ) int {
	n := 0
	for _, lg := range c.legs {
		if p := m.rarest(lg.find, lg.f); p != nil {
			n += len(p.docs)
		}
	}
	return n
}

// idf is BM25's inverse document frequency of a term held by df of n
// documents.
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// match is a slot that matched, with its score.
type match struct {
	slot uint32
	s    float64
}

// gallop returns the first index at or after from of docs whose slot is
// at least slot, len(docs) if none.
func gallop(docs []uint32, from int, slot uint32) int {
	if from >= len(docs) || docs[from] >= slot {
		return from
	}
	lo, step := from, 1
	hi := lo + step
	for hi < len(docs) && docs[hi] < slot {
		lo = hi
		step *= 2
		hi = lo + step
	}
	hi = min(hi, len(docs))
	// docs[lo] < slot; the answer is in (lo, hi].
	for lo+1 < hi {
		mid := int(uint(lo+hi) >> 1)
		if docs[mid] < slot {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// cursor walks a posting.
type cursor struct {
	p    *posting
	i    int // entry
	rel  int // position of the term in the phrase
	offI int // entry whose data starts at off
	off  int
}

// seek moves c to the first entry at or after slot; false at the end.
func (c *cursor) seek(slot uint32) bool {
	c.i = gallop(c.p.docs, c.i, slot)
	return c.i < len(c.p.docs)
}

// positions appends the positions of the current entry to buf.
func (c *cursor) positions(buf []uint32) []uint32 {
	data := c.p.data
	if b := c.i / skipEvery * skipEvery; c.offI < b || c.offI > c.i {
		c.offI, c.off = b, int(c.p.skips[c.i/skipEvery])
	}
	for ; c.offI < c.i; c.offI++ {
		c.off = skipEntry(data, c.off)
	}
	n, k := binary.Uvarint(data[c.off:])
	off := c.off + k
	end := off + int(n)
	prev := uint32(0)
	for off < end {
		var d uint32
		if b := data[off]; b < 0x80 {
			d = uint32(b)
			off++
		} else {
			v, k := binary.Uvarint(data[off:])
			d = uint32(v)
			off += k
		}
		prev += d
		buf = append(buf, prev)
	}
	// The next entry starts here.
	c.offI, c.off = c.i+1, end
	return buf
}

// fieldMask returns the index fields in which slot may match a clause of
// c: those that hold every term of the clause for slot.
func (m *memIndex) fieldMask(c *compiled, slot uint32) uint16 {
	var mask uint16
	for i := range c.must {
		cl := &c.must[i]
		for _, lg := range cl.legs {
			f := lg.f
			if mask&(1<<f) != 0 {
				continue
			}
			all := true
			for _, t := range lg.find {
				if t == "" {
					continue
				}
				p := m.posting(f, t)
				if p == nil {
					all = false
					break
				}
				if _, ok := slices.BinarySearch(p.docs, slot); !ok {
					all = false
					break
				}
			}
			if all {
				mask |= 1 << f
			}
		}
	}
	return mask
}
