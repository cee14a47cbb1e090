package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// writeTx is one write transaction with the postings it changed, which are
// written once at the end instead of once per record.
type writeTx struct {
	db       *DB
	tx       *bolt.Tx
	postings map[string]*roaring.Bitmap
	seq      uint64
	now      string
	// orgNames maps a folded organization name to the slugs it is stored
	// under; read from the orgs bucket when first needed (see checkOrg).
	orgNames map[string][]string
	// trusted marks a replica applying its primary's changes: the primary
	// checked the records, and a page may hold a mix of states that only
	// the later pages make consistent again (apply.go).
	trusted bool
	// draft marks an editor's import (ImportOptions.Draft, importdraft.go).
	draft bool
	// recs holds the records this transaction read or wrote (nil when
	// absent), so that each is decoded once; written lists the records it
	// wrote, for the record cache once it committed (mutate.go).
	recs    map[uint32]*incidentlib.Incident
	written []writtenRecord
	// stored holds the postings as they were stored when first read, so
	// that flush rewrites only the ones that changed (an update takes a
	// record out of every posting and puts it back into most of them).
	stored map[string]*roaring.Bitmap

	// What the writes record in the history (history.go): the author and
	// the author's role (begin), the action (empty: CREATE, UPDATE or
	// DELETE by what each write does) and the comment.
	author, role string
	action       incidentlib.ChangeAction
	comment      string
	// unlinked are the links the delete about to be written removed.
	unlinked []unlink
	// applying is the primary's change a replica is applying: its version
	// and history entry are copied as they are.
	applying *incidentlib.Change
	// purgeTarget is the version a PURGE removes the content of.
	purgeTarget int
	// lastAction and lastVersion are the action and version of the last
	// version written.
	lastAction  incidentlib.ChangeAction
	lastVersion int
	// deferred, when set, holds the order and reverse-link keys index
	// puts, for a batched import to put later, sorted (putIndexKey).
	deferred *deferredKeys
}

// writtenRecord is a record a transaction wrote at version (nil: deleted).
type writtenRecord struct {
	n       uint32
	version uint64
	inc     *incidentlib.Incident
}

// remember notes the current state of record n in this transaction.
func (w *writeTx) remember(n uint32, inc *incidentlib.Incident) {
	if w.recs == nil {
		w.recs = map[uint32]*incidentlib.Incident{}
	}
	w.recs[n] = inc
}

func newWriteTx(db *DB, tx *bolt.Tx) *writeTx {
	return &writeTx{
		db: db, tx: tx, postings: map[string]*roaring.Bitmap{},
		seq:    getU64(tx.Bucket(bucketMeta).Get(metaSeq)),
		now:    db.Now().UTC().Format(time.RFC3339Nano),
		author: incidentlib.BootstrapAdmin.Name,
	}
}

// posting returns the bitmap of name for change.
func (w *writeTx) posting(name string) *roaring.Bitmap {
	if bm, ok := w.postings[name]; ok {
		return bm
	}
	bm := roaring.New()
	if v := w.tx.Bucket(bucketPostings).Get([]byte(name)); v != nil {
		if err := bm.UnmarshalBinary(v); err != nil {
			panic(fmt.Sprintf("storage: posting %q is corrupt: %v", name, err))
		}
		if w.stored == nil {
			w.stored = map[string]*roaring.Bitmap{}
		}
		w.stored[name] = bm.Clone()
	}
	w.postings[name] = bm
	return bm
}

// flush writes the changed postings and the sequence, and removes
// organizations left without incidents.
func (w *writeTx) flush() error {
	pb := w.tx.Bucket(bucketPostings)
	names := make([]string, 0, len(w.postings))
	for name := range w.postings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		bm := w.postings[name]
		if bm.IsEmpty() {
			if err := pb.Delete([]byte(name)); err != nil {
				return err
			}
			if slug, ok := orgOfPosting(name); ok && w.posting(postOrg(slug)).IsEmpty() && w.posting(postRoleOrg(slug)).IsEmpty() &&
				!orgAdded(w.tx, []byte(slug)) { // an admin's organization stays (orgadmin.go)
				if err := w.tx.Bucket(bucketOrgs).Delete([]byte(slug)); err != nil {
					return err
				}
			}
			continue
		}
		if old, ok := w.stored[name]; ok && old.Equals(bm) {
			continue
		}
		if err := putPosting(pb, name, bm); err != nil {
			return err
		}
	}
	return w.tx.Bucket(bucketMeta).Put(metaSeq, u64key(w.seq))
}

// orgOfPosting returns the organization slug of an organization posting:
// the affected one's or organization_roles'.
func orgOfPosting(name string) (string, bool) {
	if slug, ok := strings.CutPrefix(name, prefixOrg); ok {
		return slug, true
	}
	return strings.CutPrefix(name, prefixRoleOrg)
}

// get reads incident n, or nil.
func (w *writeTx) get(n uint32) (*incidentlib.Incident, error) {
	if inc, ok := w.recs[n]; ok {
		return inc, nil
	}
	inc, err := w.db.getIncident(w.tx, n)
	if err == nil {
		w.remember(n, inc)
	}
	return inc, err
}

// getIncident reads and decodes incident n in tx, through the record cache.
// It returns nil if there is no such incident. The returned record is
// shared: callers must not change it.
func (db *DB) getIncident(tx *bolt.Tx, n uint32) (*incidentlib.Incident, error) {
	v := tx.Bucket(bucketIncidents).Get(u32key(n))
	if v == nil {
		return nil, nil
	}
	return db.decodeIncident(tx, n, v, 0)
}

// decodeIncident returns record n from its stored value v (version and
// IL-JSON) in tx, through the record cache.
func (db *DB) decodeIncident(tx *bolt.Tx, n uint32, v []byte, snap uint64) (*incidentlib.Incident, error) {
	if len(v) < 8 {
		return nil, fmt.Errorf("storage: record %s is truncated", incidentlib.FormatID(n))
	}
	version := binary.BigEndian.Uint64(v)
	if db.cache != nil {
		if c, ok := db.cache.Get(n); ok && c.version == version {
			if snap != 0 {
				c.seenAt.Store(snap)
			}
			return c.inc, nil
		}
	}
	inc := new(incidentlib.Incident)
	if err := json.Unmarshal(v[8:], inc); err != nil {
		return nil, fmt.Errorf("storage: record %s is corrupt: %w", incidentlib.FormatID(n), err)
	}
	// Only committed records are cached: a write transaction may roll back,
	// and its versions are then given to other records.
	if db.cache != nil && !tx.Writable() {
		c := &cachedIncident{version: version, inc: inc}
		c.seenAt.Store(snap)
		db.cache.Add(n, c)
	}
	return inc, nil
}

// put stores inc (already validated) in place of any earlier version and
// keeps every index and reverse link in step, recording the change.
func (w *writeTx) put(inc *incidentlib.Incident) error {
	return w.putEncoded(inc, nil)
}

// putStored puts inc, incident n, and returns a copy of the record as
// the store now holds it (its version and stamps), which the write
// returns to its caller.
func (w *writeTx) putStored(n uint32, inc *incidentlib.Incident) (*incidentlib.Incident, error) {
	if err := w.put(inc); err != nil {
		return nil, err
	}
	stored, err := w.get(n)
	if err != nil {
		return nil, err
	}
	c := *stored
	return &c, nil
}

// putEncoded is put with the record's canonical IL-JSON already encoded
// (nil: encoded here).
// The record is stored at the incident's next version (the version
// member is set, and the record encoded again, when it differs), and the
// version's history entry is written beside it (history.go).
func (w *writeTx) putEncoded(inc *incidentlib.Incident, data []byte) error {
	n, ok := incidentlib.ParseID(inc.ID)
	if !ok {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"id"}, "id %q is not an incident id", inc.ID)
	}
	old, err := w.get(n)
	if err != nil {
		return err
	}
	v, err := w.nextVersion(n, inc, old)
	if err != nil {
		return err
	}
	if inc.CurrentVersion() != v {
		c := *inc
		c.Version = v
		inc, data = &c, nil
	}
	if data == nil {
		if data, err = CanonicalJSON(inc); err != nil {
			return err
		}
	}
	var oldData []byte
	ib := w.tx.Bucket(bucketIncidents)
	// The index entries the earlier record and this one share stay as
	// they are, neither read nor written (an edit of the text touches no
	// posting), unless an interrupted import left some records out of
	// their postings (importbatch.go): then all of them are written.
	var kept *indexShare
	if old != nil {
		oldData = bytes.Clone(ib.Get(u32key(n))[8:])
		if w.tx.Bucket(bucketMeta).Get(metaImport) == nil {
			kept = shareOf(old, inc)
		}
		if err := w.unindex(n, old, kept); err != nil {
			return err
		}
	}
	w.seq++
	if err := ib.Put(u32key(n), append(u64key(w.seq), data...)); err != nil {
		return err
	}
	if err := w.index(n, inc, kept); err != nil {
		return err
	}
	w.remember(n, inc)
	w.written = append(w.written, writtenRecord{n, w.seq, inc})
	oldV := 0
	if old != nil {
		oldV = old.CurrentVersion()
	}
	if err := w.record(n, v, data, oldData, oldV, false); err != nil {
		return err
	}
	return w.logChange(n, false)
}

// remove deletes incident n and its index entries, and records a tombstone:
// a version of its own, with the last record kept in the history.
func (w *writeTx) remove(n uint32, old *incidentlib.Incident) error {
	if err := w.unindex(n, old, nil); err != nil {
		return err
	}
	ib := w.tx.Bucket(bucketIncidents)
	oldData := bytes.Clone(ib.Get(u32key(n))[8:])
	if err := ib.Delete(u32key(n)); err != nil {
		return err
	}
	w.seq++
	w.remember(n, nil)
	w.written = append(w.written, writtenRecord{n, w.seq, nil})
	v := old.CurrentVersion() + 1
	if w.applying != nil && w.applying.Version > 0 {
		v = w.applying.Version
	}
	if err := w.record(n, v, nil, oldData, old.CurrentVersion(), true); err != nil {
		return err
	}
	return w.logChange(n, true)
}

type change struct {
	Seq     uint64 `json:"seq"`
	ID      string `json:"id"`
	Deleted bool   `json:"deleted,omitempty"`
	// Version and Action are the history's version and action of the
	// change (absent in entries written before the history).
	Version int                      `json:"version,omitempty"`
	Action  incidentlib.ChangeAction `json:"action,omitempty"`
}

// logChange appends the change of n at the current sequence and drops the
// earlier change of the same incident, so the log holds one entry per
// incident (the latest), tombstones included.
func (w *writeTx) logChange(n uint32, deleted bool) error {
	idx := w.tx.Bucket(bucketChangeIdx)
	log := w.tx.Bucket(bucketChanges)
	if prev := idx.Get(u32key(n)); prev != nil {
		if err := log.Delete(prev); err != nil {
			return err
		}
	}
	v, _ := json.Marshal(change{Seq: w.seq, ID: incidentlib.FormatID(n), Deleted: deleted, Version: w.lastVersion, Action: w.lastAction})
	if err := log.Put(u64key(w.seq), v); err != nil {
		return err
	}
	return idx.Put(u32key(n), u64key(w.seq))
}

// putPosting stores bm, run-optimized unless its runs are many
// (countsFast), as the posting name in pb (the postings bucket).
func putPosting(pb *bolt.Bucket, name string, bm *roaring.Bitmap) error {
	bm = countsFast(bm)
	v, err := bm.ToBytes()
	if err != nil {
		return err
	}
	return pb.Put([]byte(name), v)
}
