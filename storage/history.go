package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The history of incidents. Every write of an incident adds a version:
//
//   - bucketHistory holds one small entry per version (when, who, what,
//     which fields changed), keyed u32 number + u32 version, so one
//     incident's history is one range scan;
//   - bucketVersions holds the record of version v only once v is
//     superseded (the write that supersedes it already read the bytes);
//     the current version's record lives only in bucketIncidents, so a
//     first write or an import adds only the small entry;
//   - bucketVersionLog maps the store sequence of every version to its
//     incident and version: the history feed (VersionsSince) walks it.
//
// A delete keeps the history: its version is a tombstone entry, and the
// last record goes to bucketVersions. All of it is written by putEncoded
// and remove in the write's own transaction (write.go), with the author,
// action and comment the writeTx carries (begin).

// versionMeta is what the history says of one version, in the stored
// entry and in a line of the history export alike (encoding/json writes
// its fields where it is embedded).
type versionMeta struct {
	At      string                   `json:"at"`
	Author  string                   `json:"author"`
	Role    string                   `json:"role,omitempty"`
	Action  incidentlib.ChangeAction `json:"action"`
	Changed []string                 `json:"changed,omitempty"`
	Comment string                   `json:"comment,omitempty"`
	Deleted bool                     `json:"deleted,omitempty"`
}

// historyEntry is the stored form of one version's entry.
type historyEntry struct {
	Seq uint64 `json:"seq"`
	versionMeta
	// Unlinked are the links a delete removed from other incidents: a
	// restore puts them back.
	Unlinked []unlink `json:"unlinked,omitempty"`
	// Target is the version a PURGE removed the content of.
	Target int `json:"target,omitempty"`
	// Purged are the versions whose record a PURGE removed: Target and
	// every other version with the same content (purge.go).
	Purged []int `json:"purged,omitempty"`
}

// unlink is one link a delete removed: incident ID's related and/or
// recurrence_of named the deleted one.
type unlink struct {
	ID         string `json:"id"`
	Related    bool   `json:"related,omitempty"`
	Recurrence bool   `json:"recurrence,omitempty"`
}

func histKey(n uint32, v int) []byte {
	return binary.BigEndian.AppendUint32(u32key(n), uint32(v))
}

// lastEntry returns the newest history entry of incident n and its
// version, or 0 and nil.
func lastEntry(tx *bolt.Tx, n uint32) (int, *historyEntry, error) {
	c := tx.Bucket(bucketHistory).Cursor()
	var k, v []byte
	if n == ^uint32(0) {
		k, v = c.Last()
	} else if k, _ = c.Seek(u32key(n + 1)); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || len(k) != 8 || binary.BigEndian.Uint32(k) != n {
		return 0, nil, nil
	}
	e, err := decodeEntry(k, v)
	return int(binary.BigEndian.Uint32(k[4:])), e, err
}

func decodeEntry(k, v []byte) (*historyEntry, error) {
	var e historyEntry
	if err := json.Unmarshal(v, &e); err != nil {
		return nil, fmt.Errorf("storage: history entry %x is corrupt: %w", k, err)
	}
	return &e, nil
}

// begin sets what the transaction's writes record in the history: the
// author from ctx's identity (else fallback), and the action (empty:
// CREATE, UPDATE or DELETE by what the write does).
func (w *writeTx) begin(ctx context.Context, action incidentlib.ChangeAction, fallback string) {
	w.action = action
	w.author, w.role = fallback, ""
	if id, ok := incidentlib.IdentityFrom(ctx); ok && id.Name != "" {
		w.author, w.role = id.Name, id.Role.String()
	}
}

// deletedConflict is the refusal of a write to a deleted incident.
func deletedConflict(id string) error {
	return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"id"},
		"incident %s is deleted; restore it first (restoreIncident)", id)
}

// version decides the version of a write of inc to n (old the stored
// record, nil when absent) and returns it with the history entry of the
// last version when the incident is absent (a tombstone, or nil).
func (w *writeTx) nextVersion(n uint32, inc, old *incidentlib.Incident) (int, error) {
	if w.trusted {
		// A replica: the primary's version.
		if w.applying != nil && w.applying.Version > 0 {
			return w.applying.Version, nil
		}
		if inc.Version > 0 {
			return inc.Version, nil
		}
	}
	if old != nil {
		return old.CurrentVersion() + 1, nil
	}
	last, e, err := lastEntry(w.tx, n)
	if err != nil {
		return 0, err
	}
	if e == nil {
		// A new incident: an import keeps the version a record carries
		// (an exported record), any other write starts at 1.
		if w.action == incidentlib.ActionImport && inc.Version > 0 {
			return inc.Version, nil
		}
		return 1, nil
	}
	if e.Deleted && w.action != incidentlib.ActionRestore {
		return 0, deletedConflict(inc.ID)
	}
	return last + 1, nil
}

// record writes the history entry of version v of n, whose new record
// is data (nil: a delete), superseding old (the stored record of version
// oldV, nil when absent).
func (w *writeTx) record(n uint32, v int, data []byte, oldData []byte, oldV int, deleted bool) error {
	if oldData != nil {
		// The superseded record, under the sequence of the version that
		// supersedes it: the bucket is appended to, never written in
		// the middle.
		vb := w.tx.Bucket(bucketVersions)
		vb.FillPercent = 1
		if err := vb.Put(u64key(w.seq), coldEncode(oldData)); err != nil {
			return err
		}
	}
	e := historyEntry{Seq: w.seq, versionMeta: versionMeta{At: w.now, Author: w.author, Role: w.role, Action: w.action, Comment: w.comment, Deleted: deleted}}
	if deleted {
		e.Unlinked = w.unlinked
	}
	if w.applying != nil && w.applying.Entry != nil {
		a := w.applying.Entry
		e.At, e.Author, e.Role, e.Action, e.Comment, e.Changed, e.Target = a.At, a.Author, a.AuthorRole, a.Action, a.Comment, a.ChangedFields, a.Target
	}
	if w.purgeTarget > 0 && w.applying == nil {
		e.Target = w.purgeTarget
	}
	if e.Action == "" {
		switch {
		case deleted:
			e.Action = incidentlib.ActionDelete
		case oldData == nil && v == 1:
			e.Action = incidentlib.ActionCreate
		default:
			e.Action = incidentlib.ActionUpdate
		}
	}
	if e.Changed == nil && oldData != nil && data != nil {
		e.Changed = changedFields(oldData, data)
	}
	ev, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := w.tx.Bucket(bucketHistory).Put(histKey(n, v), ev); err != nil {
		return err
	}
	if e.Action == incidentlib.ActionPurge && e.Target > 0 {
		// Every path that writes a PURGE (purgeVersion, a cluster's
		// apply, a history import) removes the content here, once the
		// entry is in place (purge.go).
		var given []int // what the primary removed, when this is its entry
		if w.applying != nil && w.applying.Entry != nil {
			given = w.applying.Entry.Purged
		}
		if e.Purged, err = purgeContent(w.tx, n, e.Target, v, given); err != nil {
			return err
		}
		if ev, err = json.Marshal(e); err != nil {
			return err
		}
		if err := w.tx.Bucket(bucketHistory).Put(histKey(n, v), ev); err != nil {
			return err
		}
	}
	w.lastAction, w.lastVersion = e.Action, v
	return w.tx.Bucket(bucketVersionLog).Put(u64key(w.seq), histKey(n, v))
}

// nextEntry returns the first history entry of n after version v, and
// its version; 0 and nil when v is the latest.
func nextEntry(tx *bolt.Tx, n uint32, v int) (int, *historyEntry, error) {
	k, val := tx.Bucket(bucketHistory).Cursor().Seek(histKey(n, v+1))
	if k == nil || len(k) != 8 || binary.BigEndian.Uint32(k) != n {
		return 0, nil, nil
	}
	e, err := decodeEntry(k, val)
	return int(binary.BigEndian.Uint32(k[4:])), e, err
}

// versionRecord returns the stored IL-JSON of version v of n (the
// caller's copy), nil when it was purged, compacted or is a tombstone. A
// superseded record is kept under the sequence of the version that
// superseded it (record); the current one is in bucketIncidents.
func versionRecord(tx *bolt.Tx, n uint32, v int) []byte {
	if _, next, err := nextEntry(tx, n, v); err == nil && next != nil {
		if r := tx.Bucket(bucketVersions).Get(u64key(next.Seq)); r != nil {
			if rec, err := coldDecode(r); err == nil {
				return rec
			}
		}
		return nil
	}
	cur := tx.Bucket(bucketIncidents).Get(u32key(n))
	if len(cur) <= 8 {
		return nil
	}
	var ver int
	if versionOf(cur[8:], &ver) != nil || max(ver, 1) != v {
		return nil
	}
	return bytes.Clone(cur[8:])
}

// versionOf reads the version member of a stored record: it is written
// last but for unknown members, so the scan looks from the end.
func versionOf(rec []byte, v *int) error {
	if i := bytes.LastIndex(rec, []byte(`,"version":`)); i >= 0 {
		j := i + len(`,"version":`)
		k := j
		for k < len(rec) && rec[k] >= '0' && rec[k] <= '9' {
			k++
		}
		if k > j && k < len(rec) && (rec[k] == ',' || rec[k] == '}') && depthAt(rec, i) == 1 {
			var n int
			for _, c := range rec[j:k] {
				n = n*10 + int(c-'0')
			}
			*v = n
			return nil
		}
	}
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(rec, &probe); err != nil {
		return err
	}
	*v = probe.Version
	return nil
}

// depthAt is the object nesting depth at offset i of a JSON text, strings
// skipped.
func depthAt(rec []byte, i int) int {
	depth, inStr := 0, false
	for p := 0; p < i; p++ {
		c := rec[p]
		switch {
		case inStr && c == '\\':
			p++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth
}

func (e *historyEntry) version(id string, v int, rec []byte) *incidentlib.IncidentVersion {
	return &incidentlib.IncidentVersion{ID: id, Version: v, At: e.At, Author: e.Author, AuthorRole: e.Role,
		Action: e.Action, ChangedFields: nonNilStrings(e.Changed), Comment: e.Comment, Record: rec, Deleted: e.Deleted, Target: e.Target,
		Purged: e.Purged}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func parseIncidentID(id string) (uint32, error) {
	n, ok := incidentlib.ParseID(id)
	if !ok {
		return 0, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"id"}, "id %q is not an incident id such as IL-0213", id)
	}
	return n, nil
}

// authorsSinceApproval returns the authors of the content versions of n
// written since its last approval.
func authorsSinceApproval(tx *bolt.Tx, n uint32) (map[string]bool, error) {
	out := map[string]bool{}
	c := tx.Bucket(bucketHistory).Cursor()
	prefix := u32key(n)
	k, _ := c.Seek(u32key(n + 1))
	var v []byte
	if n == ^uint32(0) || k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		e, err := decodeEntry(k, v)
		if err != nil {
			return nil, err
		}
		switch e.Action {
		case incidentlib.ActionApprove:
			return out, nil
		case incidentlib.ActionSubmit, incidentlib.ActionRequestChanges, incidentlib.ActionDispute,
			incidentlib.ActionWithdraw, incidentlib.ActionPurge, incidentlib.ActionDelete:
		default:
			out[e.Author] = true
		}
	}
	return out, nil
}

// checkHistory verifies the history against the records: every stored
// record is its incident's latest version and not a tombstone; every
// incident without a record ends in a tombstone; every
// superseded record and every version log entry names a version in the
// history, and every version is in the version log at its sequence.
func checkHistory(tx *bolt.Tx, add func(string, ...any)) error {
	ib, hb, vb, lb := tx.Bucket(bucketIncidents), tx.Bucket(bucketHistory), tx.Bucket(bucketVersions), tx.Bucket(bucketVersionLog)
	type last struct {
		v   int
		del bool
	}
	lastOf := map[uint32]last{}
	seqs := map[uint64]bool{}
	err := hb.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			add("history: malformed key %x", k)
			return nil
		}
		n, ver := binary.BigEndian.Uint32(k), int(binary.BigEndian.Uint32(k[4:]))
		id := incidentlib.FormatID(n)
		e, err := decodeEntry(k, v)
		if err != nil {
			add("history: %s version %d does not decode: %v", id, ver, err)
			return nil
		}
		if ver < 1 {
			add("history: %s has version %d", id, ver)
		}
		if !e.Action.IsValid() {
			add("history: %s version %d has the unknown action %q", id, ver, e.Action)
		}
		if e.Seq > 0 {
			if lv := lb.Get(u64key(e.Seq)); lv == nil || !bytes.Equal(lv, k) {
				add("history: %s version %d (seq %d) is not in the version log", id, ver, e.Seq)
			}
		}
		lastOf[n] = last{ver, e.Deleted}
		seqs[e.Seq] = true
		return nil
	})
	if err != nil {
		return err
	}
	for n, l := range lastOf {
		id := incidentlib.FormatID(n)
		rec := ib.Get(u32key(n))
		switch {
		case rec == nil && !l.del:
			add("history: %s ends at version %d, which is no delete, but has no record", id, l.v)
		case rec != nil && l.del:
			add("history: %s ends in a delete (version %d) but has a record", id, l.v)
		case rec != nil:
			var v int
			if err := versionOf(rec[8:], &v); err != nil || max(v, 1) != l.v {
				add("history: %s is stored at version %d, its history ends at %d", id, max(v, 1), l.v)
			}
		}
	}
	_ = ib.ForEach(func(k, _ []byte) error {
		if _, ok := lastOf[binary.BigEndian.Uint32(k)]; !ok && len(k) == 4 {
			add("history: %s has no history", incidentlib.FormatID(binary.BigEndian.Uint32(k)))
		}
		return nil
	})
	_ = vb.ForEach(func(k, _ []byte) error {
		if !seqs[getU64(k)] {
			add("history: the superseded record kept at seq %d belongs to no version", getU64(k))
		}
		return nil
	})
	return lb.ForEach(func(k, v []byte) error {
		if hb.Get(v) == nil {
			add("version log: seq %d names %x, which is not in the history", getU64(k), v)
		}
		return nil
	})
}

// carryHistory gives an imported record that carries none of the
// history's members (version, created_at, review_state) those of the
// stored record old, so that a record identical but for them is
// unchanged. It returns the record's own review state when it carried
// any member's absence (nil when it changed nothing): a changed record
// keeps its own.
func carryHistory(inc, old *incidentlib.Incident) *incidentlib.ReviewState {
	if inc.Version != 0 || (inc.CreatedAt == "" && old.CreatedAt == "" && inc.ReviewState == "" && old.ReviewState == "" && old.Version == 0) {
		return nil
	}
	given := inc.ReviewState
	inc.Version = old.Version
	if inc.CreatedAt == "" {
		inc.CreatedAt = old.CreatedAt
	}
	if inc.ReviewState == "" {
		inc.ReviewState = old.ReviewState
	}
	return &given
}
