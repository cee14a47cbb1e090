package storage

import (
	"bytes"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// Ordered walks for cursor pagination: the matching incidents (or every
// key of a bucket) in one order, read from a cursor position in either
// direction.

// orderedSeq is the matching incidents in one order, as order keys.
type orderedSeq interface {
	// first returns the first key at or after from (nil: the start) going
	// forward, or at or before from (nil: the end) going backward.
	first(from []byte, backward bool) []byte
	// next returns the following key in the direction of the last first.
	next() []byte
}

// collect reads up to n keys strictly between after and before, from the
// start (or the end when backward). hasMore says more matched in the
// reading direction; hasBeyond says something matched on the other side of
// the starting cursor.
func collect(seq orderedSeq, after, before []byte, n int, backward bool) (keys [][]byte, hasMore, hasBeyond bool) {
	start, stop := after, before
	if backward {
		start, stop = before, after
	}
	inRange := func(k []byte) bool {
		if stop == nil {
			return true
		}
		if backward {
			return bytes.Compare(k, stop) > 0
		}
		return bytes.Compare(k, stop) < 0
	}
	k := seq.first(start, backward)
	if k != nil && start != nil && bytes.Equal(k, start) {
		k = seq.next()
	}
	var arena []byte // the keys' copies, in one allocation while they are of one length
	for ; k != nil && inRange(k); k = seq.next() {
		if len(keys) == n {
			hasMore = true
			break
		}
		if keys == nil {
			keys = make([][]byte, 0, min(n, 128))
			arena = make([]byte, 0, min(n, 128)*len(k))
		}
		arena = append(arena, k...) // a longer key moves the rest: the earlier copies stay valid
		keys = append(keys, arena[len(arena)-len(k):len(arena):len(arena)])
	}
	if start != nil {
		// Anything at or beyond the starting cursor, looking the other way?
		b := seq.first(start, !backward)
		hasBeyond = b != nil
	}
	if backward {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	return keys, hasMore, hasBeyond
}

// indexSeq walks the order index, keeping the keys whose incident matches.
type indexSeq struct {
	c        *bolt.Cursor
	ord      byte
	ms       *matchSet
	backward bool
}

func (s *indexSeq) accept(k []byte) []byte {
	for ; k != nil; k = s.step() {
		if len(k) == 0 || k[0] != s.ord {
			return nil
		}
		key := k[1:]
		if s.ms.all || s.ms.contains(numberOfOrderKey(s.ord, key)) {
			return key
		}
	}
	return nil
}

func (s *indexSeq) step() []byte {
	if s.backward {
		k, _ := s.c.Prev()
		return k
	}
	k, _ := s.c.Next()
	return k
}

func (s *indexSeq) first(from []byte, backward bool) []byte {
	s.backward = backward
	if from == nil {
		from = s.dateStart(backward)
	}
	if !backward {
		k, _ := s.c.Seek(append([]byte{s.ord}, from...))
		return s.accept(k)
	}
	var k []byte
	if from == nil {
		k, _ = s.c.Seek([]byte{s.ord + 1})
	} else {
		k, _ = s.c.Seek(append(append([]byte{s.ord}, from...), 0xff))
	}
	if k == nil {
		k, _ = s.c.Last()
	} else {
		k, _ = s.c.Prev()
	}
	for len(k) > 0 && k[0] == s.ord && from != nil && bytes.Compare(k[1:], from) > 0 {
		k, _ = s.c.Prev()
	}
	return s.accept(k)
}

// dateStart lets a date-ordered scan of a date-bounded filter begin at the
// bound instead of at the end of the index.
func (s *indexSeq) dateStart(backward bool) []byte {
	var bound *uint32
	switch {
	case s.ord == ordDateAsc && !backward, s.ord == ordDateDesc && backward:
		bound = s.ms.dateFrom
	case s.ord == ordDateDesc && !backward, s.ord == ordDateAsc && backward:
		bound = s.ms.dateTo
	}
	if bound == nil {
		return nil
	}
	d := *bound
	if s.ord == ordDateDesc {
		d = ^d
	}
	if backward {
		return append(append([]byte{0}, u32key(d)...), 0xff, 0xff, 0xff, 0xff)
	}
	return append([]byte{0}, u32key(d)...)
}

func (s *indexSeq) next() []byte { return s.accept(s.step()) }

// memSeq orders a small set in memory from the sort keys.
type memSeq struct {
	keys     [][]byte
	i        int
	backward bool
}

func newMemSeq(tx *bolt.Tx, ord byte, bm *roaring.Bitmap) *memSeq {
	sb := tx.Bucket(bucketSortKeys)
	s := &memSeq{keys: make([][]byte, 0, bm.GetCardinality())}
	it := bm.Iterator()
	for it.HasNext() {
		n := it.Next()
		s.keys = append(s.keys, orderKey(ord, n, decodeSortKey(sb.Get(u32key(n)))))
	}
	sort.Slice(s.keys, func(i, j int) bool { return bytes.Compare(s.keys[i], s.keys[j]) < 0 })
	return s
}

func (s *memSeq) first(from []byte, backward bool) []byte {
	s.backward = backward
	if !backward {
		s.i = 0
		if from != nil {
			s.i = sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], from) >= 0 })
		}
	} else {
		s.i = len(s.keys) - 1
		if from != nil {
			s.i = sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], from) > 0 }) - 1
		}
	}
	return s.cur()
}

func (s *memSeq) cur() []byte {
	if s.i < 0 || s.i >= len(s.keys) {
		return nil
	}
	return s.keys[s.i]
}

func (s *memSeq) next() []byte {
	if s.backward {
		s.i--
	} else {
		s.i++
	}
	return s.cur()
}

// bucketSeq walks every key of a bucket.
type bucketSeq struct {
	c        *bolt.Cursor
	backward bool
}

func (s *bucketSeq) first(from []byte, backward bool) []byte {
	s.backward = backward
	var k []byte
	switch {
	case !backward && from == nil:
		k, _ = s.c.First()
	case !backward:
		k, _ = s.c.Seek(from)
	case from == nil:
		k, _ = s.c.Last()
	default:
		k, _ = s.c.Seek(from)
		if k == nil {
			k, _ = s.c.Last()
		} else if !bytes.Equal(k, from) {
			k, _ = s.c.Prev()
		}
	}
	return k
}

func (s *bucketSeq) next() []byte {
	var k []byte
	if s.backward {
		k, _ = s.c.Prev()
	} else {
		k, _ = s.c.Next()
	}
	return k
}
