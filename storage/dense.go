package storage

import (
	"math/bits"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// Dense bitsets for the aggregates (stats.go). Crossing two lists of
// postings counts many intersections of a few thousand incidents each:
// two roaring arrays are merged element by element (microseconds each; a
// byYear of 30 years by 15 terms took milliseconds at 100,000 incidents),
// two bitsets of the incident numbers are a popcount of a few thousand
// words. Bitsets start at number 0: incident numbers are dense from the
// first ids on.

// maxDenseWords bounds a bitset (2 MiB): postings that reach further are
// counted with roaring's own intersections.
const maxDenseWords = 1 << 18

// denseWords is how many words the bitsets of bms take, and whether that
// is within maxDenseWords.
func denseWords(bms ...*roaring.Bitmap) (int, bool) {
	words := uint64(0)
	for _, bm := range bms {
		words = max(words, bm.DenseSize())
	}
	return int(words), words <= maxDenseWords
}

// denseSlabs keep the bitsets' memory from request to request.
var denseSlabs sync.Pool

// slab returns n zeroed words, from the pool when it has room; give them
// back with putSlab.
func slab(n int) *[]uint64 {
	if p, ok := denseSlabs.Get().(*[]uint64); ok && cap(*p) >= n {
		*p = (*p)[:n]
		clear(*p)
		return p
	}
	s := make([]uint64, n)
	return &s
}

func putSlab(p *[]uint64) { denseSlabs.Put(p) }

// andInPlace keeps in a the bits also in b, and reports whether any is left.
func andInPlace(a, b []uint64) bool {
	var any uint64
	for i := range a {
		a[i] &= b[i]
		any |= a[i]
	}
	return any != 0
}

// andCount is how many bits a and b (at least as long) share.
func andCount(a, b []uint64) uint64 {
	b = b[:len(a)]
	var n int
	for i := range a {
		n += bits.OnesCount64(a[i] & b[i])
	}
	return uint64(n)
}

// countIn is how many numbers of bm are in the bitset w, walking bm: for
// many small postings against one set.
func countIn(w []uint64, bm *roaring.Bitmap) uint64 {
	var n uint64
	var buf [256]uint32
	limit := uint64(len(w)) * 64
	it := bm.ManyIterator()
	for k := it.NextMany(buf[:]); k > 0; k = it.NextMany(buf[:]) {
		for _, x := range buf[:k] {
			if uint64(x) >= limit {
				return n
			}
			n += (w[x>>6] >> (x & 63)) & 1
		}
	}
	return n
}

// denseCache keeps the bitsets of the postings crossed, for the state of
// the store they were read in (bbolt's transaction id, which every
// committed write moves on): term and year postings change only with
// writes, and a dashboard asks the same crossings again and again.
type denseCache struct {
	mu    sync.Mutex
	txid  int
	words int // held, at most maxCachedWords
	m     map[string][]uint64
}

// maxCachedWords bounds the cache (32 MiB).
const maxCachedWords = 1 << 22

// get returns the bitset of posting p as read in tx; shared, read only.
func (c *denseCache) get(tx *bolt.Tx, p namedPosting) []uint64 {
	id := tx.ID()
	c.mu.Lock()
	if c.txid != id {
		c.txid, c.words, c.m = id, 0, nil
	}
	w, ok := c.m[p.key]
	c.mu.Unlock()
	if ok {
		return w
	}
	w = make([]uint64, p.bm.DenseSize())
	p.bm.WriteDenseTo(w)
	c.mu.Lock()
	if c.txid == id && c.words+len(w) <= maxCachedWords {
		if c.m == nil {
			c.m = map[string][]uint64{}
		}
		c.m[p.key] = w
		c.words += len(w)
	}
	c.mu.Unlock()
	return w
}

// crossCounts calls emit with |set ∩ as[i] ∩ bs[j]| for every pair with
// a count, in the order of as, then bs, the postings read in tx.
func (c *denseCache) crossCounts(tx *bolt.Tx, set *roaring.Bitmap, as, bs []namedPosting, emit func(i, j int, n uint64)) {
	if set.IsEmpty() {
		return
	}
	all := []*roaring.Bitmap{set}
	for _, p := range as {
		all = append(all, p.bm)
	}
	for _, p := range bs {
		all = append(all, p.bm)
	}
	if _, ok := denseWords(all...); !ok {
		for i, a := range as {
			in := roaring.And(set, a.bm)
			if in.IsEmpty() {
				continue
			}
			for j, b := range bs {
				if n := in.AndCardinality(b.bm); n > 0 {
					emit(i, j, n)
				}
			}
		}
		return
	}
	// Counts run over the words of the set only.
	setWords := int(set.DenseSize())
	buf := slab(2 * setWords)
	defer putSlab(buf)
	sw, aw := (*buf)[:setWords], (*buf)[setWords:]
	set.WriteDenseTo(sw)
	bw := make([][]uint64, len(bs))
	var nonzero []int32 // the words of a row with bits, when they are few
	for i, a := range as {
		clear(aw)
		copy(aw, c.get(tx, a))
		if !andInPlace(aw, sw) {
			continue
		}
		nonzero = nonzero[:0]
		for k, x := range aw {
			if x != 0 {
				if nonzero = append(nonzero, int32(k)); len(nonzero) > setWords/4 {
					break
				}
			}
		}
		sparse := len(nonzero) <= setWords/4
		for j, b := range bs {
			if bw[j] == nil {
				bw[j] = c.get(tx, b)
			}
			bj := bw[j]
			var n uint64
			if sparse {
				for _, k := range nonzero {
					if int(k) < len(bj) {
						n += uint64(bits.OnesCount64(aw[k] & bj[k]))
					}
				}
			} else {
				m := min(len(aw), len(bj))
				n = andCount(aw[:m], bj[:m])
			}
			if n > 0 {
				emit(i, j, n)
			}
		}
	}
}
