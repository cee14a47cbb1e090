package search

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
)

// memIndex is the inverted index. Each indexed version of an incident
// gets a new slot, so postings only ever grow at their end and stay in
// slot order; a replaced or deleted incident's slot is dead (seq 0) and its
// entries are skipped until compact drops them (or the index is saved and
// reopened). Until then they count in the document frequencies, as in
// Lucene.
type memIndex struct {
	seq      uint64                   // store sequence of the last change applied
	slots    []slotInfo               // by slot
	lens     [numIFields][]uint32     // by field, then slot: the field's length in terms
	byNum    map[uint32]uint32        // incident number -> live slot
	postings map[string]*termPostings // by term
	sumLen   [numIFields]uint64       // total length of each field over live slots
	live     int
	dead     int
}

type slotInfo struct {
	num uint32 // incident number
	seq uint64 // store sequence of the record indexed; 0 for a dead slot
}

// termPostings are the postings of one term, by field.
type termPostings [numIFields]*posting

// posting lists the slots that hold one term in one field: per slot, its
// frequency there (at most 255 in tfs, for scoring) and, in data, the
// positions as deltas, unsigned varints, after their length in bytes.
type posting struct {
	docs  []uint32
	tfs   []uint8
	data  []byte
	skips []uint32 // offset in data of every skipEvery-th entry
}

// skipEvery is how many entries one skip of a posting covers.
const skipEvery = 8

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendRaw adds slot with its entry as encoded in data.
func (p *posting) appendRaw(slot uint32, tf uint8, entry []byte) {
	if len(p.docs)%skipEvery == 0 {
		p.skips = append(p.skips, uint32(len(p.data)))
	}
	p.docs = append(p.docs, slot)
	p.tfs = append(p.tfs, tf)
	p.data = append(p.data, entry...)
}

func (m *memIndex) posting(f ifield, term string) *posting {
	if tp := m.postings[term]; tp != nil {
		return tp[f]
	}
	return nil
}

func newMemIndex() *memIndex {
	return &memIndex{byNum: map[uint32]uint32{}, postings: map[string]*termPostings{}}
}

func (m *memIndex) remove(num uint32) {
	s, ok := m.byNum[num]
	if !ok {
		return
	}
	delete(m.byNum, num)
	for f := range m.lens {
		m.sumLen[f] -= uint64(m.lens[f][s])
	}
	m.slots[s].seq = 0
	m.live--
	m.dead++
}

// addSlot gives incident num, made from the record of seq, a new slot.
func (m *memIndex) addSlot(num uint32, seq uint64, lens *[numIFields]uint32) uint32 {
	slot := uint32(len(m.slots))
	m.slots = append(m.slots, slotInfo{num: num, seq: seq})
	m.byNum[num] = slot
	for f := range lens {
		m.lens[f] = append(m.lens[f], lens[f])
		m.sumLen[f] += uint64(lens[f])
	}
	m.live++
	return slot
}

// skipEntry returns the offset of the entry after the one at off in data.
func skipEntry(data []byte, off int) int {
	n, k := binary.Uvarint(data[off:])
	return off + k + int(n)
}

// compact drops the entries of dead slots.
func (m *memIndex) compact() {
	if m.dead == 0 {
		return
	}
	for term, tp := range m.postings {
		empty := true
		for f, p := range tp {
			if p == nil {
				continue
			}
			np := &posting{}
			off := 0
			for i, s := range p.docs {
				next := skipEntry(p.data, off)
				if m.slots[s].seq != 0 {
					np.appendRaw(s, p.tfs[i], p.data[off:next])
				}
				off = next
			}
			if len(np.docs) == 0 {
				tp[f] = nil
				continue
			}
			empty = false
			tp[f] = np
		}
		if empty {
			delete(m.postings, term)
		}
	}
	m.dead = 0
	// Slots stay: numbers of live slots do not change.
}

// The index file: magic, format version, then unsigned varints: the
// sequence, the number of slots, the live slots (slot, number, sequence,
// field lengths), the postings (1 + field, term, slots as deltas, data)
// ended by a 0, and a CRC-32 (IEEE) of everything before it.
var fileMagic = []byte("ILSEARCH")

func (m *memIndex) writeFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := crc32.NewIEEE()
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	flush := func() error {
		h.Write(buf)
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	uv := func(v uint64) { buf = binary.AppendUvarint(buf, v) }
	buf = append(buf, fileMagic...)
	uv(uint64(len(formatVersion)))
	buf = append(buf, formatVersion...)
	uv(m.seq)
	uv(uint64(len(m.slots)))
	uv(uint64(m.live))
	for s, sl := range m.slots {
		if sl.seq == 0 {
			continue
		}
		uv(uint64(s))
		uv(uint64(sl.num))
		uv(sl.seq)
		for f := range m.lens {
			uv(uint64(m.lens[f][s]))
		}
		if len(buf) > 1<<16 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	for term, tp := range m.postings {
		for fi, p := range tp {
			if p == nil {
				continue
			}
			// Entries of dead slots are left out.
			docs, data := p.docs, p.data
			if m.dead > 0 {
				docs, data = nil, nil
				off := 0
				for _, s := range p.docs {
					next := skipEntry(p.data, off)
					if m.slots[s].seq != 0 {
						docs = append(docs, s)
						data = append(data, p.data[off:next]...)
					}
					off = next
				}
				if len(docs) == 0 {
					continue
				}
			}
			uv(uint64(fi) + 1)
			uv(uint64(len(term)))
			buf = append(buf, term...)
			uv(uint64(len(docs)))
			prev := uint32(0)
			for _, d := range docs {
				uv(uint64(d - prev))
				prev = d
			}
			uv(uint64(len(data)))
			if err := flush(); err != nil {
				return err
			}
			h.Write(data)
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
	}
	uv(0)
	if err := flush(); err != nil {
		return err
	}
	if _, err := w.Write(binary.BigEndian.AppendUint32(nil, h.Sum32())); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

var errCorrupt = errors.New("the index file is corrupt")

// decodeIndex reads an index file. The postings' data stay slices of b.
func decodeIndex(b []byte) (*memIndex, error) {
	if len(b) < len(fileMagic)+4 || !bytes.Equal(b[:len(fileMagic)], fileMagic) {
		return nil, errCorrupt
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, errCorrupt
	}
	r := reader{b: body, off: len(fileMagic)}
	version := string(r.bytes(r.uv()))
	if r.err == nil && version != formatVersion {
		return nil, fmt.Errorf("it has format %q, this program writes %q", version, formatVersion)
	}
	m := newMemIndex()
	m.seq = r.uv()
	nslots := r.uv()
	live := r.uv()
	if r.err != nil || nslots > uint64(len(b)) || live > nslots {
		return nil, errCorrupt
	}
	m.slots = make([]slotInfo, nslots)
	for f := range m.lens {
		m.lens[f] = make([]uint32, nslots)
	}
	m.live = int(live)
	m.byNum = make(map[uint32]uint32, live)
	for range live {
		s := r.uv()
		if s >= nslots {
			return nil, errCorrupt
		}
		sl := &m.slots[s]
		sl.num = uint32(r.uv())
		sl.seq = r.uv()
		for f := range m.lens {
			m.lens[f][s] = uint32(r.uv())
			m.sumLen[f] += uint64(m.lens[f][s])
		}
		m.byNum[sl.num] = uint32(s)
	}
	for {
		f := r.uv()
		if f == 0 || r.err != nil {
			break
		}
		term := string(r.bytes(r.uv()))
		n := r.uv()
		if r.err != nil || f > uint64(numIFields) || n > uint64(len(b)) {
			return nil, errCorrupt
		}
		p := &posting{docs: make([]uint32, n), tfs: make([]uint8, n)}
		prev := uint64(0)
		for i := range p.docs {
			prev += r.uv()
			if prev >= nslots {
				return nil, errCorrupt
			}
			p.docs[i] = uint32(prev)
		}
		data := r.bytes(r.uv())
		if r.err != nil {
			return nil, errCorrupt
		}
		p.data = data[:len(data):len(data)]
		off := 0
		for i := range p.tfs {
			if i%skipEvery == 0 {
				p.skips = append(p.skips, uint32(off))
			}
			n, k := binary.Uvarint(p.data[off:])
			if k <= 0 || n > uint64(len(p.data)-off-k) {
				return nil, errCorrupt
			}
			off += k
			tf := 0
			for _, c := range p.data[off : off+int(n)] {
				if c < 0x80 {
					tf++
				}
			}
			if n > 0 && p.data[off+int(n)-1] >= 0x80 {
				return nil, errCorrupt
			}
			p.tfs[i] = uint8(min(tf, 255))
			off += int(n)
		}
		if off != len(p.data) {
			return nil, errCorrupt
		}
		tp := m.postings[term]
		if tp == nil {
			tp = &termPostings{}
			m.postings[term] = tp
		}
		tp[f-1] = p
	}
	if r.err != nil || r.off != len(body) {
		return nil, errCorrupt
	}
	// Dead slots hold no entries in a saved file.
	return m, nil
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) uv() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.off += n
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)-r.off) {
		r.err = errCorrupt
		return nil
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v
}
