package storage

import (
	"bytes"
	"encoding/binary"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The read path of the batch loaders: one GraphQL request reads a few
// hundred records, links and postings in a handful of read transactions.
// In a read-only transaction bbolt allocates a bucket handle on every
// tx.Bucket call and a cursor on every Get, so the readers below open each
// bucket and cursor once per transaction and seek with it.

// recordReader reads incident records in one transaction with one cursor.
type recordReader struct {
	db   *DB
	tx   *bolt.Tx
	c    *bolt.Cursor
	key  [4]byte
	snap uint64 // 1 + the transaction's store sequence; 0 in a write transaction
}

func (db *DB) recordReader(tx *bolt.Tx) *recordReader {
	r := &recordReader{db: db, tx: tx, c: tx.Bucket(bucketIncidents).Cursor()}
	if !tx.Writable() && db.cache != nil {
		r.snap = getU64(tx.Bucket(bucketMeta).Get(metaSeq)) + 1
	}
	return r
}

// get is db.getIncident(tx, n): the record, through the record cache, or
// nil if there is none. A cached record already seen at this transaction's
// sequence is taken as it is: nothing has changed it since.
func (r *recordReader) get(n uint32) (*incidentlib.Incident, error) {
	if r.snap != 0 {
		if c, ok := r.db.cache.Peek(n); ok && c.seenAt.Load() == r.snap {
			return c.inc, nil
		}
	}
	binary.BigEndian.PutUint32(r.key[:], n)
	k, v := r.c.Seek(r.key[:])
	if v == nil || !bytes.Equal(k, r.key[:]) {
		return nil, nil
	}
	return r.db.decodeIncident(r.tx, n, v, r.snap)
}

// linkReader lists the sources of links to targets in one reverse-link
// bucket with one cursor, as sources does.
type linkReader struct {
	c      *bolt.Cursor
	prefix [4]byte
}

func newLinkReader(tx *bolt.Tx, bucket []byte) *linkReader {
	return &linkReader{c: tx.Bucket(bucket).Cursor()}
}

func (r *linkReader) sources(target uint32) []uint32 {
	var out []uint32
	binary.BigEndian.PutUint32(r.prefix[:], target)
	for k, _ := r.c.Seek(r.prefix[:]); k != nil && bytes.HasPrefix(k, r.prefix[:]); k, _ = r.c.Next() {
		out = append(out, binary.BigEndian.Uint32(k[4:]))
	}
	return out
}

// seekGet is Bucket.Get through a cursor the caller opened once per
// transaction (Get makes a cursor per call).
func seekGet(c *bolt.Cursor, key []byte) []byte {
	k, v := c.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// postingCardinality is readPosting(tx, name).GetCardinality() through a
// cursor on the postings bucket opened once by the caller. It reads the
// count from the serialized bitmap's header, without building the bitmap.
func postingCardinality(c *bolt.Cursor, name string) uint64 {
	v := seekGet(c, []byte(name))
	if v == nil {
		return 0
	}
	if n, ok := serializedCardinality(v); ok {
		return n
	}
	bm := roaring.New()
	if _, err := bm.FromBuffer(v); err != nil {
		return 0
	}
	return bm.GetCardinality()
}

// serializedCardinality sums the container cardinalities in the header of
// a bitmap in the portable roaring format (a cookie, the number of
// containers, a run-container bitset if any, then a key and cardinality-1,
// 16 bits each, per container). ok is false for anything else.
func serializedCardinality(v []byte) (n uint64, ok bool) {
	const cookieRuns, cookieNoRuns = 12347, 12346
	if len(v) < 4 {
		return 0, false
	}
	cookie := binary.LittleEndian.Uint32(v)
	var size, header int
	switch {
	case cookie&0xFFFF == cookieRuns:
		size = int(cookie>>16) + 1
		header = 4 + (size+7)/8
	case cookie == cookieNoRuns:
		if len(v) < 8 {
			return 0, false
		}
		size = int(binary.LittleEndian.Uint32(v[4:]))
		header = 8
	default:
		return 0, false
	}
	if size > 1<<16 || len(v) < header+4*size {
		return 0, false
	}
	for c := range size {
		n += uint64(binary.LittleEndian.Uint16(v[header+4*c+2:])) + 1
	}
	return n, true
}
