package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// walkFile reads the store file with ReadAt (not through bbolt's mapping)
// and checks the structure of every page reachable from the meta page in
// use: the page's id and type, and that every element's key and value lie
// inside the page. bbolt's own walk of the pages (its writable open and
// tx.Check run one in a goroutine of bbolt's, with no recovery) trusts
// these offsets: a flipped byte in an element's position makes it read
// outside the file's mapping, which ends the process. Found here first,
// it is a *CorruptError.
//
// The layout is bbolt's (go.etcd.io/bbolt/internal/common): a 16-byte page
// header (id u64, flags u16, count u16, overflow u32), then count 16-byte
// elements whose key (and value) positions are relative to the element.
func walkFile(path string, pageSize int64, fileSize int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := &pageWalk{f: f, path: path, ps: pageSize, size: fileSize, seen: map[uint64]bool{}}
	root, hwm, err := w.meta()
	if err != nil {
		return err
	}
	w.hwm = hwm
	_, err = w.tree(root, nil, nil)
	return err
}

const (
	pageHeaderSize  = 16
	pageElementSize = 16
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	bucketHeaderLen = 16
	metaMagic       = 0xED0CDAED
)

type pageWalk struct {
	f        *os.File
	path     string
	ps, size int64
	hwm      uint64
	seen     map[uint64]bool
	buf      []byte
}

func (w *pageWalk) corrupt(page uint64, format string, args ...any) error {
	return &CorruptError{Path: w.path, Page: int64(page), Detail: fmt.Sprintf(format, args...)}
}

// meta returns the root page and the high-water mark of the meta page
// bbolt uses: of the two that validate, the later.
func (w *pageWalk) meta() (root, hwm uint64, err error) {
	var best [2]uint64
	var bestTx uint64
	found := false
	for id := range uint64(2) {
		b := make([]byte, 80)
		if _, err := w.f.ReadAt(b, int64(id)*w.ps); err != nil {
			continue
		}
		m := b[pageHeaderSize:]
		if binary.LittleEndian.Uint32(m[0:]) != metaMagic || binary.LittleEndian.Uint32(m[4:]) != 2 {
			continue
		}
		h := fnv.New64a()
		h.Write(m[:56])
		if h.Sum64() != binary.LittleEndian.Uint64(m[56:]) {
			continue
		}
		if tx := binary.LittleEndian.Uint64(m[48:]); !found || tx > bestTx {
			found, bestTx = true, tx
			best = [2]uint64{binary.LittleEndian.Uint64(m[16:]), binary.LittleEndian.Uint64(m[40:])}
		}
	}
	if !found {
		return 0, 0, w.corrupt(0, "both meta pages (0 and 1) are unreadable")
	}
	return best[0], best[1], nil
}

// page reads page id with its overflow pages and checks its header.
func (w *pageWalk) page(id uint64) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, w.corrupt(id, "a link to page %d, outside the file's pages 2 to %d", id, w.hwm-1)
	}
	hdr := make([]byte, pageHeaderSize)
	if _, err := w.f.ReadAt(hdr, int64(id)*w.ps); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, w.corrupt(id, "page %d lies past the end of the file (%d bytes): the file is truncated", id, w.size)
		}
		return nil, err
	}
	if got := binary.LittleEndian.Uint64(hdr); got != id {
		return nil, w.corrupt(id, "page %d says it is page %d", id, got)
	}
	span := (int64(binary.LittleEndian.Uint32(hdr[12:])) + 1) * w.ps
	if int64(id)*w.ps+span > w.size || id+uint64(span/w.ps) > w.hwm {
		return nil, w.corrupt(id, "page %d and its overflow (%d bytes) run past the end of the file or its pages", id, span)
	}
	for o := id; o < id+uint64(span/w.ps); o++ {
		if w.seen[o] {
			return nil, w.corrupt(o, "page %d is linked twice", o)
		}
		w.seen[o] = true
	}
	if int64(cap(w.buf)) < span {
		w.buf = make([]byte, span)
	}
	b := w.buf[:span]
	if _, err := w.f.ReadAt(b, int64(id)*w.ps); err != nil {
		return nil, w.corrupt(id, "page %d cannot be read whole: %v", id, err)
	}
	return b, nil
}

// tree checks the page tree of a bucket from page id, and that its keys
// are in order: every key of the subtree at least minKey, below maxKey
// (nil: unbounded), as bbolt's own check wants them. It returns the
// subtree's largest key.
func (w *pageWalk) tree(id uint64, minKey, maxKey []byte) ([]byte, error) {
	b, err := w.page(id)
	if err != nil {
		return nil, err
	}
	flags := binary.LittleEndian.Uint16(b[8:])
	count := int(binary.LittleEndian.Uint16(b[10:]))
	if pageHeaderSize+count*pageElementSize > len(b) {
		return nil, w.corrupt(id, "page %d: %d elements do not fit", id, count)
	}
	switch flags {
	case branchPageFlag:
		keys, children := make([][]byte, count), make([]uint64, count)
		for i := range count {
			e := pageHeaderSize + i*pageElementSize
			pos, ksize := int64(binary.LittleEndian.Uint32(b[e:])), int64(binary.LittleEndian.Uint32(b[e+4:]))
			if int64(e)+pos+ksize > int64(len(b)) {
				return nil, w.corrupt(id, "branch page %d: element %d's key lies outside the page", id, i)
			}
			keys[i] = bytes.Clone(b[int64(e)+pos : int64(e)+pos+ksize])
			children[i] = binary.LittleEndian.Uint64(b[e+8:])
		}
		// b is reused by the reads below.
		running, largest := minKey, []byte(nil)
		for i := range count {
			if err := w.order(id, i, keys[i], running, maxKey); err != nil {
				return nil, err
			}
			upper := maxKey
			if i < count-1 {
				upper = keys[i+1]
			}
			if largest, err = w.tree(children[i], keys[i], upper); err != nil {
				return nil, err
			}
			running = largest
		}
		return largest, nil
	case leafPageFlag:
		var subs []uint64
		var last []byte
		for i := range count {
			e := pageHeaderSize + i*pageElementSize
			eflags := binary.LittleEndian.Uint32(b[e:])
			pos, ksize, vsize := int64(binary.LittleEndian.Uint32(b[e+4:])), int64(binary.LittleEndian.Uint32(b[e+8:])), int64(binary.LittleEndian.Uint32(b[e+12:]))
			start := int64(e) + pos
			if start+ksize+vsize > int64(len(b)) {
				return nil, w.corrupt(id, "leaf page %d: element %d's key or value lies outside the page", id, i)
			}
			key := b[start : start+ksize]
			if err := w.order(id, i, key, minKey, maxKey); i == 0 && err != nil {
				return nil, err
			} else if i > 0 {
				if err := w.order(id, i, key, last, maxKey); err != nil {
					return nil, err
				}
			}
			last = key
			if eflags&bucketLeafFlag == 0 {
				continue
			}
			v := b[start+ksize : start+ksize+vsize]
			if len(v) < bucketHeaderLen {
				return nil, w.corrupt(id, "leaf page %d: element %d is a bucket of %d bytes", id, i, len(v))
			}
			if r := binary.LittleEndian.Uint64(v); r != 0 {
				subs = append(subs, r)
			} else if err := w.inline(id, v[bucketHeaderLen:]); err != nil {
				return nil, err
			}
		}
		last = bytes.Clone(last)
		for _, s := range subs {
			if _, err := w.tree(s, nil, nil); err != nil {
				return nil, err
			}
		}
		return last, nil
	}
	return nil, w.corrupt(id, "page %d has the flags %#x of no branch or leaf page", id, flags)
}

// order checks key, the i-th of page id, against the key before it (or
// the subtree's lower bound, for the first) and the subtree's upper bound.
func (w *pageWalk) order(id uint64, i int, key, prev, maxKey []byte) error {
	switch {
	case i == 0 && prev != nil && bytes.Compare(prev, key) > 0:
		return w.corrupt(id, "page %d: its first key is below its place in the tree", id)
	case i > 0 && bytes.Compare(prev, key) >= 0:
		return w.corrupt(id, "page %d: key %d is not above the key before it", id, i)
	case maxKey != nil && bytes.Compare(key, maxKey) >= 0:
		return w.corrupt(id, "page %d: key %d is not below its place in the tree", id, i)
	}
	return nil
}

// inline checks an inline bucket's page, held in a value of leaf page
// parent.
func (w *pageWalk) inline(parent uint64, p []byte) error {
	if len(p) < pageHeaderSize {
		return w.corrupt(parent, "leaf page %d: an inline bucket of %d bytes", parent, len(p))
	}
	if flags := binary.LittleEndian.Uint16(p[8:]); flags != leafPageFlag {
		return w.corrupt(parent, "leaf page %d: an inline bucket whose page has flags %#x", parent, flags)
	}
	count := int(binary.LittleEndian.Uint16(p[10:]))
	for i := range count {
		e := pageHeaderSize + i*pageElementSize
		if e+pageElementSize > len(p) {
			return w.corrupt(parent, "leaf page %d: an inline bucket's %d elements do not fit", parent, count)
		}
		eflags := binary.LittleEndian.Uint32(p[e:])
		pos, ksize, vsize := binary.LittleEndian.Uint32(p[e+4:]), binary.LittleEndian.Uint32(p[e+8:]), binary.LittleEndian.Uint32(p[e+12:])
		if int64(e)+int64(pos)+int64(ksize)+int64(vsize) > int64(len(p)) || ksize == 0 {
			return w.corrupt(parent, "leaf page %d: an inline bucket's element %d lies outside it", parent, i)
		}
		if eflags&bucketLeafFlag != 0 {
			return w.corrupt(parent, "leaf page %d: an inline bucket holds a bucket", parent)
		}
	}
	return nil
}
