package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The indexes a record write keeps in step, in its transaction: the
// postings, the sort key and order keys, and the recurrence and related
// links with their reverse entries. An edit touches only the entries the
// stored record and its replacement do not share (indexShare).

func linkKey(target, source uint32) []byte {
	return binary.BigEndian.AppendUint32(u32key(target), source)
}

// index adds incident n to every index; with kept, only the entries it
// does not list (unindex left them).
func (w *writeTx) index(n uint32, inc *incidentlib.Incident, kept *indexShare) error {
	orgs := w.tx.Bucket(bucketOrgs)
	if !w.trusted {
		if err := w.checkOrgs(n, inc); err != nil {
			return err
		}
	}
	for _, o := range inc.Organizations() {
		ov, _ := json.Marshal(incidentlib.Organization{Slug: o.Slug, Name: o.Name})
		if err := orgs.Put([]byte(o.Slug), ov); err != nil {
			return err
		}
		if w.orgNames != nil {
			k := foldName(o.Name)
			if !slices.Contains(w.orgNames[k], o.Slug) {
				w.orgNames[k] = append(w.orgNames[k], o.Slug)
			}
		}
	}
	for _, p := range postingsOf(inc) {
		if !kept.hasPosting(p) {
			w.posting(p).Add(n)
		}
	}
	sk := sortKeyOf(inc)
	if !kept.sameSortKey() {
		if err := w.tx.Bucket(bucketSortKeys).Put(u32key(n), sk.encode()); err != nil {
			return err
		}
	}
	for _, ord := range allOrders {
		k := orderKey(ord, n, sk)
		if kept != nil && bytes.Equal(k, orderKey(ord, n, kept.oldKey)) {
			continue
		}
		if err := w.putIndexKey(bucketOrders, append([]byte{ord}, k...)); err != nil {
			return err
		}
	}
	if inc.RecurrenceOf != "" && (kept == nil || !kept.recurrence) {
		t, _ := incidentlib.ParseID(inc.RecurrenceOf)
		if err := w.tx.Bucket(bucketRecurrences).Put(linkKey(t, n), nil); err != nil {
			return err
		}
		w.posting(postHasRec).Add(t)
	}
	for _, r := range inc.Related {
		if kept != nil && slices.Contains(kept.related, r) {
			continue
		}
		t, _ := incidentlib.ParseID(r)
		if err := w.putIndexKey(bucketRelatedRev, linkKey(t, n)); err != nil {
			return err
		}
	}
	return nil
}

// indexShare is what an incident's stored record and the record that
// replaces it have alike in the indexes, which a write leaves as they
// are: the postings both are in, their sort keys (the order keys where
// they agree), the recurrence link when it stays, and the related links
// both have.
type indexShare struct {
	postings       []string
	oldKey, newKey sortKey
	recurrence     bool
	related        []string
}

func shareOf(old, inc *incidentlib.Incident) *indexShare {
	s := &indexShare{oldKey: sortKeyOf(old), newKey: sortKeyOf(inc), recurrence: old.RecurrenceOf == inc.RecurrenceOf}
	next := postingsOf(inc)
	for _, p := range postingsOf(old) {
		if slices.Contains(next, p) {
			s.postings = append(s.postings, p)
		}
	}
	for _, r := range old.Related {
		if slices.Contains(inc.Related, r) {
			s.related = append(s.related, r)
		}
	}
	return s
}

// hasPosting reports whether posting p stays as it is (never, with no
// share).
func (s *indexShare) hasPosting(p string) bool { return s != nil && slices.Contains(s.postings, p) }

// sameSortKey reports whether the sort key stays as it is.
func (s *indexShare) sameSortKey() bool { return s != nil && s.oldKey == s.newKey }

// unindex removes incident n, as it was stored, from every index; with
// kept, not the entries it lists (index leaves them too).
func (w *writeTx) unindex(n uint32, old *incidentlib.Incident, kept *indexShare) error {
	for _, p := range postingsOf(old) {
		if !kept.hasPosting(p) {
			w.posting(p).Remove(n)
		}
	}
	sk := sortKeyOf(old)
	if !kept.sameSortKey() {
		if err := w.tx.Bucket(bucketSortKeys).Delete(u32key(n)); err != nil {
			return err
		}
	}
	ob := w.tx.Bucket(bucketOrders)
	for _, ord := range allOrders {
		k := orderKey(ord, n, sk)
		if kept != nil && bytes.Equal(k, orderKey(ord, n, kept.newKey)) {
			continue
		}
		if err := ob.Delete(append([]byte{ord}, k...)); err != nil {
			return err
		}
	}
	if old.RecurrenceOf != "" && (kept == nil || !kept.recurrence) {
		t, _ := incidentlib.ParseID(old.RecurrenceOf)
		rb := w.tx.Bucket(bucketRecurrences)
		if err := rb.Delete(linkKey(t, n)); err != nil {
			return err
		}
		if k, _ := rb.Cursor().Seek(u32key(t)); k == nil || !bytes.HasPrefix(k, u32key(t)) {
			w.posting(postHasRec).Remove(t)
		}
	}
	rr := w.tx.Bucket(bucketRelatedRev)
	for _, r := range old.Related {
		if kept != nil && slices.Contains(kept.related, r) {
			continue
		}
		t, _ := incidentlib.ParseID(r)
		if err := rr.Delete(linkKey(t, n)); err != nil {
			return err
		}
	}
	return nil
}

// sources lists the incidents that link to target in a reverse-link bucket.
func sources(tx *bolt.Tx, bucket []byte, target uint32) []uint32 {
	var out []uint32
	prefix := u32key(target)
	c := tx.Bucket(bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, binary.BigEndian.Uint32(k[4:]))
	}
	return out
}
