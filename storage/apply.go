package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Applying another library's change log (incidentlib.ChangeApplier): a
// read replica copies its primary's change feed (ChangesSince, served as
// GET /api/v1/changes) into its own store. ApplyChanges writes one page of
// changes and the position it reached in one transaction, so a copy that
// stops at any moment resumes from a position that matches its data
// exactly, without gaps or duplicates.

// metaFollowSeq holds, in a replica's store, the primary's sequence up to
// which the replica has applied the primary's changes (u64). A store that
// never followed a primary has no such key.
var metaFollowSeq = []byte("follow_seq")

// RecordRules returns the taxonomy and the record size limit in bytes
// (Options.MaxRecordBytes, else incidentlib.DefaultMaxRecordBytes) that
// the store holds records to, for a reader of another library's records
// that validates them as the store will (replica.Store).
func (st Incidents) RecordRules() (*incidentlib.Taxonomy, int) {
	if st.db.maxRecord <= 0 {
		return st.db.Taxonomies().Taxonomy(), incidentlib.DefaultMaxRecordBytes
	}
	return st.db.Taxonomies().Taxonomy(), st.db.maxRecord
}

// AppliedSeq returns the primary sequence this store has applied up to,
// and whether the store follows a primary at all (it applied a page
// before).
func (st Incidents) AppliedSeq(ctx context.Context) (seq uint64, following bool, err error) {
	return st.db.metaPosition(ctx, metaFollowSeq)
}

// metaPosition reads a position kept in the meta bucket under key, and
// whether it is there at all.
func (db *DB) metaPosition(ctx context.Context, key []byte) (seq uint64, set bool, err error) {
	v, err := db.metaValue(ctx, key)
	return getU64(v), v != nil, err
}

// metaValue returns a copy of the meta bucket's value at key, nil when
// it has none.
func (db *DB) metaValue(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := db.view(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta).Get(key); b != nil {
			v = bytes.Clone(b)
		}
		return nil
	})
	return v, err
}

// ApplyChanges applies one page of a primary's changes, oldest first, in
// one write transaction: a change with a record stores it in place of any
// earlier version (updated_at and review kept exactly as given, every index
// and reverse link kept in step), a tombstone removes the incident if the
// store has it. The transaction also stores the position: the sequence of
// the last change. Nothing is stamped; records identical to the stored ones
// are left alone.
//
// from is the position the page was read after: it must be the stored
// position (0 for a store that never followed), else nothing is written and
// ECONFLICT is returned, so that a page is never applied twice or after a
// gap. Sequences must increase and exceed from. Records go through
// incidentlib.ValidateIncoming with the store's record size limit and
// taxonomy; one that breaks a rule a replica skips for (SkipRule) is
// refused (EINVALID names the change), one that breaks only the text rule
// is copied as the primary holds it. A change the reader Skipped
// (incidentlib.Change.Skipped) writes nothing, but the position passes it. Links and
// organizations are not checked: the primary checked them, and a page read
// from a log that keeps only each incident's latest change may hold
// records whose links are completed by later pages. Returns the new
// position. If ctx ends during the transaction, nothing is written.
func (st Incidents) ApplyChanges(ctx context.Context, from uint64, changes []incidentlib.Change) (uint64, error) {
	if len(changes) == 0 {
		return from, nil
	}
	var es incidentlib.Errors
	prev := from
	nums := make([]uint32, len(changes))
	encoded := make([][]byte, len(changes)) // each record's canonical IL-JSON, encoded once
	for i, c := range changes {
		field := []string{"changes", fmt.Sprint(i)}
		if c.Seq <= prev {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(field, "seq"),
				"change %d has sequence %d, not above %d", i, c.Seq, prev))
		}
		prev = c.Seq
		if c.Skipped != "" {
			continue // skipped by the reader: the position passes it
		}
		n, ok := incidentlib.ParseID(c.ID)
		if !ok {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(field, "id"), "change %d (seq %d): %q is not an incident id", i, c.Seq, c.ID))
			continue
		}
		nums[i] = n
		if c.Deleted {
			continue
		}
		if c.Incident == nil && c.Entry != nil {
			continue // a purged version: its history entry only
		}
		if c.Incident == nil || c.Incident.ID != c.ID {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, field, "change %d (seq %d) of %s carries no record of %s", i, c.Seq, c.ID, c.ID))
			continue
		}
		// The one validation of records from outside. A record that
		// breaks only the text rule was stored by the primary before the
		// rule: it is copied as it is.
		data, err := json.Marshal(c.Incident)
		if err != nil {
			return from, err
		}
		encoded[i] = data
		err = c.Incident.ValidateIncoming(st.db.Taxonomies().Taxonomy(), st.db.maxRecord, len(data))
		if incidentlib.SkipRule(err) == "" {
			continue
		}
		for _, e := range incidentlib.ErrorList(err) {
			es = append(es, &incidentlib.Error{Code: e.Code, Field: append(field, e.Field...),
				Message: fmt.Sprintf("change %d (seq %d) of %s: %s", i, c.Seq, c.ID, e.Message)})
		}
	}
	if len(es) > 0 {
		return from, es
	}
	last := changes[len(changes)-1].Seq
	err := st.db.update(ctx, func(w *writeTx) error {
		meta := w.tx.Bucket(bucketMeta)
		if cur := getU64(meta.Get(metaFollowSeq)); cur != from {
			return incidentlib.Errorf(incidentlib.ECONFLICT,
				"the store has applied its primary's changes up to %d, not %d: the page does not follow on", cur, from)
		}
		w.trusted = true
		for i, c := range changes {
			if i%128 == 0 {
				if err := ctx.Err(); err != nil {
					return ctxError(err)
				}
			}
			if c.Skipped != "" {
				continue // skipped by the reader
			}
			// The primary's version and history entry, as they are.
			w.applying = nil
			if c.Version > 0 {
				w.applying = &changes[i]
			}
			old, err := w.get(nums[i])
			if err != nil {
				return err
			}
			if c.Deleted {
				if old != nil {
					if err := w.remove(nums[i], old); err != nil {
						return err
					}
				} else if c.Entry != nil {
					// Another tombstone of an incident already deleted (a
					// purge of a deleted incident's version).
					w.seq++
					if err := w.record(nums[i], c.Version, nil, nil, 0, true); err != nil {
						return err
					}
				}
				continue
			}
			if c.Incident == nil {
				// A version whose record the primary purged: the entry.
				w.seq++
				if err := w.record(nums[i], c.Version, nil, nil, 0, false); err != nil {
					return err
				}
				continue
			}
			if old != nil && w.storedBytes(nums[i], encoded[i]) {
				continue
			}
			if err := w.putEncoded(c.Incident, encoded[i]); err != nil {
				return err
			}
		}
		return meta.Put(metaFollowSeq, u64key(last))
	})
	if err != nil {
		return from, err
	}
	return last, nil
}
