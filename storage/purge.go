package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Purges that purge (docs/editing.md, "Purge"). The rules live here and
// every path reaches them:
//
//   - purgeContent removes the record of the purged version and of every
//     other version with the same content (a SUBMIT, a review decision, a
//     withdrawal or a restore carries its version's record unchanged but
//     for the stamps). record (history.go) calls it for every PURGE entry
//     it writes: purgeVersion, a cluster member's apply, a history import.
//   - purgeRefusal (PurgeVersion) refuses to purge the live content.
//   - purgedBy answers a purge of a version with no content left: the PURGE
//     that removed it, nothing written.
//   - A purge marks the file (metaPurgedPages): bbolt does not clear the
//     pages it frees, so until the file is compacted the text may remain in
//     free pages; Backup then sends a compacted copy (live data only), never
//     the file's pages, and Compact's copy carries no mark.

// metaPurgedPages is set (to 1) by a purge: the file's free pages may hold
// purged content until the file is rewritten (Compact).
var metaPurgedPages = []byte("purged_pages")

// purgeContent removes the stored record of version target of n, of
// every other version before upto (the PURGE's own version) whose content
// is the same (sameContent), and of the versions given (the list of the
// primary's PURGE entry, on a replica: the records it no longer sends
// cannot be compared), and returns those versions, oldest first. The live
// record (bucketIncidents) is never touched: PurgeVersion refuses to
// purge the live content.
func purgeContent(tx *bolt.Tx, n uint32, target, upto int, given []int) ([]int, error) {
	type ver struct {
		v   int
		seq uint64
	}
	var vs []ver
	c := tx.Bucket(bucketHistory).Cursor()
	prefix := u32key(n)
	for k, val := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, val = c.Next() {
		v := int(binary.BigEndian.Uint32(k[4:]))
		if v > upto {
			break
		}
		e, err := decodeEntry(k, val)
		if err != nil {
			return nil, err
		}
		vs = append(vs, ver{v, e.Seq})
	}
	// The record of version vs[i] is kept under the sequence of vs[i+1]
	// (record).
	vb := tx.Bucket(bucketVersions)
	recs := make([][]byte, len(vs))
	var want []byte
	for i := 0; i+1 < len(vs); i++ {
		r := vb.Get(u64key(vs[i+1].seq))
		if r == nil {
			continue
		}
		rec, err := coldDecode(r)
		if err != nil {
			return nil, err
		}
		recs[i] = rec
		if vs[i].v == target {
			want = rec
		}
	}
	purged := slices.Clone(given)
	for i := 0; i+1 < len(vs); i++ {
		v := vs[i].v
		if !slices.Contains(given, v) && (recs[i] == nil || want == nil || (v != target && !sameContent(recs[i], want))) {
			continue
		}
		if recs[i] != nil {
			if err := vb.Delete(u64key(vs[i+1].seq)); err != nil {
				return nil, err
			}
		}
		if !slices.Contains(purged, v) {
			purged = append(purged, v)
		}
	}
	slices.Sort(purged)
	if len(purged) == 0 {
		return nil, nil
	}
	if err := tx.Bucket(bucketMeta).Put(metaPurgedPages, []byte{1}); err != nil {
		return nil, err
	}
	return purged, nil
}

// sameContent reports whether two records have the same content: the same
// IL-JSON but for what a write stamps (version, updated_at, created_at,
// review_state, review.written_by, review.reviewed_at, review.reviewed_by),
// which a review action or a restore changes without changing the text.
// It is the one rule of "the same content": a purge removes every version
// with the purged one's content and refuses the live content (purge.go),
// and the four-eyes rule counts the authors of every version with the
// current content (contentauthors.go).
func sameContent(a, b []byte) bool {
	x, ok1 := contentMembers(a)
	y, ok2 := contentMembers(b)
	if !ok1 || !ok2 {
		return bytes.Equal(a, b)
	}
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func contentMembers(rec []byte) (map[string]string, bool) {
	ms, ok := members(rec)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		switch m.name {
		case "version", "updated_at", "created_at", "review_state":
			continue
		case "review":
			if rs, ok := members(m.val); ok {
				for _, r := range rs {
					if r.name != "reviewed_at" && r.name != "reviewed_by" && r.name != "written_by" {
						out["review."+r.name] = string(r.val)
					}
				}
				continue
			}
		}
		out[m.name] = string(m.val)
	}
	return out, true
}

// purgeRefusal is why version of incident id (number n, live record cur,
// nil when deleted) may not be purged: it is the current version, or its
// content is the live content. rec is the version's record.
func purgeRefusal(id string, version int, cur *incidentlib.Incident, curRec, rec []byte) error {
	if cur == nil {
		return nil
	}
	if cur.CurrentVersion() == version {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"version"},
			"version %d is the current version of %s: edit or restore the incident first", version, id)
	}
	if curRec != nil && sameContent(curRec, rec) {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"version"},
			"the content of version %d is the live content of %s (version %d): write a version without it, or delete the incident, first",
			version, id, cur.CurrentVersion())
	}
	return nil
}

// purgedBy returns the PURGE entry of n that removed the content of
// version (the latest one naming it), else version's own entry (a delete
// has no content).
func purgedBy(tx *bolt.Tx, id string, n uint32, version int) (*incidentlib.IncidentVersion, error) {
	c := tx.Bucket(bucketHistory).Cursor()
	prefix := u32key(n)
	var out *incidentlib.IncidentVersion
	for k, val := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, val = c.Next() {
		v := int(binary.BigEndian.Uint32(k[4:]))
		e, err := decodeEntry(k, val)
		if err != nil {
			return nil, err
		}
		switch {
		case e.Action == incidentlib.ActionPurge && (e.Target == version || slices.Contains(e.Purged, version)):
			out = e.version(id, v, versionRecord(tx, n, v))
		case v == version && out == nil:
			out = e.version(id, v, nil)
		}
	}
	return out, nil
}

// purgedPages reports whether a purge may have left content in the file's
// free pages (metaPurgedPages).
func (db *DB) purgedPages(ctx context.Context) (bool, error) {
	var set bool
	err := db.view(ctx, func(tx *bolt.Tx) error {
		set = tx.Bucket(bucketMeta).Get(metaPurgedPages) != nil
		return nil
	})
	return set, err
}

// compactedBackup writes to w a copy of the store made by bbolt's
// compaction from one read transaction (live keys and values only, none
// of the file's free pages), built in a temporary file beside the store;
// the copy carries no metaPurgedPages.
func (db *DB) compactedBackup(ctx context.Context, w io.Writer) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(db.path), ".incidentlib-scrub-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	if err := compactInto(tmp, db.bolt); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, ctxError(err)
	}
	// The copy's pages up to its high-water mark, not the file's slack
	// (bbolt grows a file ahead of its data).
	cp, err := bolt.Open(tmp, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer cp.Close()
	var n int64
	err = cp.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// compactInto writes a compacted copy of src into the new file path, with
// no metaPurgedPages: the copy holds no free page of src.
func compactInto(path string, src *bolt.DB) error {
	to, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		return err
	}
	if err := bolt.Compact(to, src, 64<<20); err != nil {
		to.Close()
		return fmt.Errorf("compact: %w", err)
	}
	err = to.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			return b.Delete(metaPurgedPages)
		}
		return nil
	})
	if err == nil {
		err = to.Sync()
	}
	if cerr := to.Close(); err == nil {
		err = cerr
	}
	return err
}
