package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// A batched import (import --db of IL-JSON) reads its input twice: the
// first pass checks every record (ImportCheck) keeping only ids and link
// targets, the second writes the records in bounded transactions
// (BatchedImport). One transaction for a whole import grows bbolt's
// in-memory nodes without bound: bbolt splits a node only at commit, so
// every key put into the orders bucket moved all the keys after it in its
// node, and the time per record grew with the size of the import. Bounded
// transactions keep the nodes at page size, the memory at one batch, and
// the time linear.

// metaImport is the meta key of an import in progress: written by the
// first batch of a batched import, updated by each, removed by the last.
var metaImport = []byte("import")

// ImportProgress is the marker of a batched import that has not finished.
type ImportProgress struct {
	Done  int `json:"done"`  // records written
	Total int `json:"total"` // records of the import
	// Unindexed lists the incidents written since the import last wrote
	// its postings: the next batched import indexes them again first,
	// whatever its input.
	Unindexed []uint32 `json:"unindexed,omitempty"`
}

func (p *ImportProgress) String() string {
	return fmt.Sprintf("an import was interrupted after %d of %d records; re-run it: imports are idempotent", p.Done, p.Total)
}

// InterruptedImport returns the marker of a batched import that wrote some
// of its batches and not its last one (it was killed, or a write failed),
// or nil.
func (st Incidents) InterruptedImport(ctx context.Context) (*ImportProgress, error) {
	var p *ImportProgress
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		p = importMarker(tx)
		return nil
	})
	return p, err
}

func importMarker(tx *bolt.Tx) *ImportProgress {
	v := tx.Bucket(bucketMeta).Get(metaImport)
	if v == nil {
		return nil
	}
	p := &ImportProgress{}
	if err := json.Unmarshal(v, p); err != nil {
		return &ImportProgress{Done: -1}
	}
	return p
}

// BatchedImport writes the records of one import in batches, one
// transaction each (see NewBatchedImport).
type BatchedImport struct {
	db      *DB
	total   int
	done    int
	batches int
	opts    BatchedImportOptions
	// The postings the import changed and their stored state, carried
	// from batch to batch and written every postingFlushEvery batches and
	// by the last: a posting holds up to every incident, so writing the
	// touched ones in every batch would cost time in proportion to the
	// store for each batch, and the import's time would grow with the
	// square of its size.
	postings, stored map[string]*roaring.Bitmap
	// The order and reverse-link keys of the records written since the
	// postings were last written, put with them, sorted: these keys fall
	// anywhere in their buckets (by date, by updated_at, by link target),
	// so a batch putting its own would rewrite a page of the bucket for
	// nearly every key once the bucket is larger than a batch, and the
	// time per record would grow with the store.
	deferred  *deferredKeys
	unindexed []uint32 // written since the postings were last written
	mark      int      // len(unindexed) before the running batch
}

// postingFlushEvery is how many batches an import writes between two
// writes of its postings and deferred keys.
const postingFlushEvery = 32

// BatchedImportOptions control a batched import.
type BatchedImportOptions struct {
	// KeepUpdatedAt keeps updated_at as given (see ImportOptions).
	KeepUpdatedAt bool
}

// NewBatchedImport starts an import of total records, checked before by an
// ImportCheck of the whole import. The store must not be written by
// anything else until the import's last batch: it is meant for import
// --db, which holds the file. Every batch but the last records the
// import's progress in the store (InterruptedImport, and Check reports
// it); the last removes the record.
func (st Incidents) NewBatchedImport(total int, opts BatchedImportOptions) *BatchedImport {
	return &BatchedImport{db: st.db, total: total, opts: opts}
}

// Write writes one batch in one transaction; last says it is the import's
// last. Links are not checked here (the ImportCheck did): a record may
// link to one of a later batch. Records identical to the stored ones are
// left alone. The first batch first indexes again the records an
// interrupted import wrote without writing their postings.
func (bi *BatchedImport) Write(ctx context.Context, incs []*incidentlib.Incident, last bool) (*incidentlib.ImportResult, error) {
	return bi.WriteEncoded(ctx, incs, nil, last)
}

// WriteEncoded is Write with the records' stored forms made ahead:
// data[i], when data is not nil and data[i] is not nil, is
// CanonicalJSON(incs[i]) (with KeepUpdatedAt; otherwise it is not used).
func (bi *BatchedImport) WriteEncoded(ctx context.Context, incs []*incidentlib.Incident, data [][]byte, last bool) (*incidentlib.ImportResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	db := bi.db
	res := &incidentlib.ImportResult{}
	var seq uint64
	start := time.Now()
	flush := last || (bi.batches+1)%postingFlushEvery == 0
	if err := db.refuseWrite(); err != nil {
		return nil, err
	}
	bi.mark = len(bi.unindexed)
	err := db.updateGuarded(func(tx *bolt.Tx) error {
		if err := db.checkUnlogged(ctx, tx); err != nil { // never a cluster node's (cluster.go)
			return err
		}
		w := newWriteTx(db, tx)
		w.begin(ctx, incidentlib.ActionImport, incidentlib.AuthorImport) // the history's author and action
		if bi.postings != nil {
			w.postings, w.stored = bi.postings, bi.stored
		}
		if bi.deferred == nil {
			bi.deferred = &deferredKeys{}
		}
		w.deferred = bi.deferred
		if bi.batches == 0 {
			again, err := w.reindexInterrupted()
			if err != nil {
				return err
			}
			// Indexed again in memory: listed until written.
			bi.unindexed = append(bi.unindexed, again...)
		}
		for i, in := range incs {
			var enc []byte
			if data != nil {
				enc = data[i]
			}
			if err := w.importOne(in, enc, bi.opts.KeepUpdatedAt, res); err != nil {
				if e := incidentlib.ErrorList(err); len(e) == 1 {
					return &incidentlib.Error{Code: e[0].Code, Field: e[0].Field, Message: fmt.Sprintf("incident %s: %s", in.ID, e[0].Message)}
				}
				return err
			}
		}
		for _, r := range w.written {
			bi.unindexed = append(bi.unindexed, r.n)
		}
		p := ImportProgress{Done: bi.done + len(incs), Total: bi.total, Unindexed: bi.unindexed}
		v, _ := json.Marshal(p)
		meta := w.tx.Bucket(bucketMeta)
		if err := meta.Put(metaImport, v); err != nil {
			return err
		}
		seq = w.seq
		bi.postings, bi.stored = w.postings, w.stored
		if bi.stored == nil {
			bi.stored = map[string]*roaring.Bitmap{}
		}
		return meta.Put(metaSeq, u64key(w.seq))
	})
	if err = db.writeError(err); err != nil {
		// As the transaction: gone. The marker of the batches before
		// lists what they left unindexed.
		bi.postings, bi.stored, bi.deferred = nil, nil, nil
		bi.unindexed = bi.unindexed[:bi.mark]
		return nil, err
	}
	bi.done += len(incs)
	bi.batches++
	db.observeCommit(time.Since(start))
	db.publish(seq)
	db.releaseMapped()
	if flush {
		if err := bi.flushIndex(last); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// deferredChunk is the most deferred keys flushIndex puts in one
// transaction: a transaction holds in memory every page its keys fall on,
// and sorted keys spread over a bucket fall on at most as many pages as
// there are keys, so it bounds the memory of a flush whatever the size of
// the store.
const deferredChunk = 1 << 16

// flushIndex writes what the import's batches left in memory since the
// last flush: the deferred keys, sorted, in transactions of deferredChunk
// keys, then the postings, with the marker (removed after the last
// batch, else listing nothing unindexed) in the same transaction. Until
// that one commits, the marker lists the records whose entries may be
// missing, and an interrupted import has them indexed again.
func (bi *BatchedImport) flushIndex(last bool) error {
	db := bi.db
	keys := bi.deferred.sorted()
	for len(keys) > 0 {
		n := min(len(keys), deferredChunk)
		chunk := keys[:n]
		keys = keys[n:]
		if err := db.refuseWrite(); err != nil {
			return bi.flushFailed(err)
		}
		err := db.updateGuarded(func(tx *bolt.Tx) error {
			var b *bolt.Bucket
			var name string
			for _, k := range chunk {
				if b == nil || k.bucket != name {
					name, b = k.bucket, tx.Bucket([]byte(k.bucket))
				}
				if err := b.Put(k.key, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err := db.writeError(err); err != nil {
			return bi.flushFailed(err)
		}
		db.releaseMapped()
	}
	var seq uint64
	err := db.updateGuarded(func(tx *bolt.Tx) error {
		w := newWriteTx(db, tx)
		if bi.postings != nil {
			w.postings, w.stored = bi.postings, bi.stored
		}
		meta := tx.Bucket(bucketMeta)
		if last {
			if err := meta.Delete(metaImport); err != nil {
				return err
			}
		} else {
			v, _ := json.Marshal(ImportProgress{Done: bi.done, Total: bi.total})
			if err := meta.Put(metaImport, v); err != nil {
				return err
			}
		}
		seq = w.seq
		return w.flush()
	})
	if err := db.writeError(err); err != nil {
		return bi.flushFailed(err)
	}
	bi.postings, bi.stored, bi.deferred = nil, nil, nil
	bi.unindexed = bi.unindexed[:0]
	db.publish(seq)
	db.releaseMapped()
	return nil
}

// flushFailed forgets what flushIndex did not write: the marker lists it.
func (bi *BatchedImport) flushFailed(err error) error {
	bi.postings, bi.stored, bi.deferred = nil, nil, nil
	return err
}

// reindexInterrupted indexes again the records that an interrupted import
// wrote after it last wrote its postings, and removes its marker. It
// returns the records it indexed again.
func (w *writeTx) reindexInterrupted() ([]uint32, error) {
	p := importMarker(w.tx)
	if p == nil {
		return nil, nil
	}
	var again []uint32
	for _, n := range p.Unindexed {
		old, err := w.get(n)
		if err != nil {
			return nil, err
		}
		if old == nil {
			continue
		}
		// Its postings may lack it: unindex removes what is there, index
		// adds all. The record and its change stay as they are.
		if err := w.unindex(n, old, nil); err != nil {
			return nil, err
		}
		if err := w.index(n, old, nil); err != nil {
			return nil, err
		}
		again = append(again, n)
	}
	return again, w.tx.Bucket(bucketMeta).Delete(metaImport)
}

// deferredKeys are index keys (with empty values) that a batched import
// puts later, sorted, bucket by bucket: one pass over each bucket's pages
// for many batches of records.
type deferredKeys struct {
	keys []deferredKey
}

type deferredKey struct {
	bucket string
	key    []byte
}

// putIndexKey puts key, with an empty value, into the index bucket named
// bucket: now, or with the transaction's deferred keys when it has them
// (a batched import). Only keys that nothing reads back until the import's
// last batch are deferred: the order and reverse-link keys (index).
func (w *writeTx) putIndexKey(bucket, key []byte) error {
	if w.deferred == nil {
		return w.tx.Bucket(bucket).Put(key, nil)
	}
	w.deferred.keys = append(w.deferred.keys, deferredKey{string(bucket), key})
	return nil
}

// sorted returns the keys in bucket and key order.
func (d *deferredKeys) sorted() []deferredKey {
	if d == nil {
		return nil
	}
	slices.SortFunc(d.keys, func(a, b deferredKey) int {
		if c := strings.Compare(a.bucket, b.bucket); c != 0 {
			return c
		}
		return bytes.Compare(a.key, b.key)
	})
	return d.keys
}
