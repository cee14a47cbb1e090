package storage

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"

	kflate "github.com/klauspost/compress/flate"
)

// Superseded records (bucketVersions) are cold: read only by history
// reads, restores and exports. They are kept compressed (DEFLATE at its
// fastest level, about a quarter of the IL-JSON), so that the history
// grows the file by less per write: a stored value is 'z' and the
// compressed record, or the record itself ('{' first).
//
// Every write compresses the record it supersedes, on every node of a
// cluster, so the compressor is klauspost/compress's DEFLATE: the same
// format (the standard library's reader reads it, and reads the values
// older releases wrote with the standard library's writer), in about 55 %
// of the standard library's time on a record, 4 % larger
// (TestColdFormat).

var flateWriters = sync.Pool{New: func() any {
	w, _ := kflate.NewWriter(io.Discard, kflate.BestSpeed)
	return w
}}

// coldEncode returns the stored form of a superseded record.
func coldEncode(rec []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(rec)/3 + 16)
	buf.WriteByte('z')
	w := flateWriters.Get().(*kflate.Writer)
	w.Reset(&buf)
	if _, err := w.Write(rec); err != nil || w.Close() != nil {
		flateWriters.Put(w)
		return rec
	}
	flateWriters.Put(w)
	if buf.Len() >= len(rec) {
		return rec
	}
	return buf.Bytes()
}

// coldDecode returns the IL-JSON of a stored superseded record (the
// caller's own copy).
func coldDecode(v []byte) ([]byte, error) {
	if len(v) == 0 || v[0] != 'z' {
		return bytes.Clone(v), nil
	}
	r := flate.NewReader(bytes.NewReader(v[1:]))
	defer r.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("storage: a superseded record does not decompress: %w", err)
	}
	return out, nil
}
