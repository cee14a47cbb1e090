package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Replaying another store's history of the taxonomy and the organizations:
// each entry carries the whole term or organization after the change
// (TaxonomyChange.After), so a store that follows another (a replica) can
// take the same taxonomy, organization aliases and added organizations
// entry by entry. The incidents a rename or merge rewrote come through the
// change log as any other write (ApplyChanges).
//
// The primary serves the entries at GET /api/v1/taxonomy/changes
// (restapi); the follower (replica) applies them before each page of
// incident changes.

// metaFollowTax holds, in a follower's store, the number of the last entry
// of its primary's history it applied (u64).
var metaFollowTax = []byte("follow_taxonomy")

// TaxonomyChangesAfter returns, oldest first, up to limit entries of the
// history numbered above after. limit must be positive.
func (st Taxonomies) TaxonomyChangesAfter(ctx context.Context, after uint64, limit int) ([]*incidentlib.TaxonomyChange, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out []*incidentlib.TaxonomyChange
	err := st.db.viewLatest(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTaxHistory)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(u64key(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			ch := new(incidentlib.TaxonomyChange)
			if err := json.Unmarshal(v, ch); err != nil {
				return fmt.Errorf("storage: history entry %d is corrupt: %w", getU64(k), err)
			}
			out = append(out, ch)
		}
		return nil
	})
	return out, err
}

// AppliedTaxonomy returns the number of the last entry of a primary's
// history this store applied (0: none).
func (st Taxonomies) AppliedTaxonomy(ctx context.Context) (uint64, error) {
	v, err := st.db.metaValue(ctx, metaFollowTax)
	return getU64(v), err
}

// ApplyTaxonomyChanges applies entries of a primary's history, oldest
// first, in one transaction with the position they reach: each term and
// organization takes the state its entry gives it, and each entry is
// recorded in this store's history (numbered here, author and time kept).
// from must be the stored position (AppliedTaxonomy), else ECONFLICT and
// nothing is written; numbers must increase above it. A term that would
// break the taxonomy (a slug or alias used twice) is EINVALID, and nothing
// is written. The taxonomy in memory is replaced before the new sequence
// is published. Returns the new position.
func (st Taxonomies) ApplyTaxonomyChanges(ctx context.Context, from uint64, changes []*incidentlib.TaxonomyChange) (uint64, error) {
	if len(changes) == 0 {
		return from, nil
	}
	return st.ApplyTaxonomyChangesThrough(ctx, from, changes[len(changes)-1].Number, changes)
}

// ApplyTaxonomyChangesThrough is ApplyTaxonomyChanges with the position it
// reaches given: through, at least the last entry's number. A follower
// passes the entries it refused (a hostile primary's) this way: they are
// left out of changes, and the position goes past them. changes may be
// empty. EINVALID when an entry is numbered above through.
func (st Taxonomies) ApplyTaxonomyChangesThrough(ctx context.Context, from, through uint64, changes []*incidentlib.TaxonomyChange) (uint64, error) {
	if through == from && len(changes) == 0 {
		return from, nil
	}
	prev := from
	for i, ch := range changes {
		if ch == nil || ch.Number <= prev {
			return from, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"changes", fmt.Sprint(i)}, "entry %d is not numbered above %d", i, prev)
		}
		prev = ch.Number
	}
	if through < prev {
		return from, incidentlib.Errorf(incidentlib.EINVALID, "the position %d is below the last entry's number %d", through, prev)
	}
	prev = through
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		meta := w.tx.Bucket(bucketMeta)
		if cur := getU64(meta.Get(metaFollowTax)); cur != from {
			return incidentlib.Errorf(incidentlib.ECONFLICT, "the store has applied its primary's history up to entry %d, not %d", cur, from)
		}
		before := w.seq
		for i, ch := range changes {
			if err := w.replay(ch); err != nil {
				if code := incidentlib.ErrorCode(err); !incidentlib.IsInternal(code) {
					return incidentlib.FieldErrorf(code, []string{"changes", fmt.Sprint(i)}, "entry %d (%s %s): %s", ch.Number, ch.Action, ch.Subject, incidentlib.ErrorMessage(err))
				}
				return err
			}
			c := *ch
			if w.seq == before {
				w.seq++
			}
			c.Seq = w.seq
			if err := appendHistory(w.tx, &c); err != nil {
				return err
			}
		}
		if _, err := taxonomyOf(w.tx, st.db.taxes.builtin); err != nil {
			return incidentlib.Errorf(incidentlib.EINVALID, "the entries would break the taxonomy: %s", strings.TrimPrefix(err.Error(), "storage: the stored taxonomy: "))
		}
		return meta.Put(metaFollowTax, u64key(prev))
	})
	if err != nil {
		return from, err
	}
	return prev, nil
}

// replay gives the term or organization of ch the state ch.After holds.
func (w *writeTx) replay(ch *incidentlib.TaxonomyChange) error {
	bad := func(format string, args ...any) error {
		return incidentlib.Errorf(incidentlib.EINVALID, format, args...)
	}
	switch ch.Action {
	case incidentlib.ActionAddTerm, incidentlib.ActionUpdateTerm, incidentlib.ActionAddAliases,
		incidentlib.ActionDeprecateTerm, incidentlib.ActionUndeprecateTerm, incidentlib.ActionReleaseTerm:
		var t incidentlib.Term
		if err := json.Unmarshal(ch.After, &t); err != nil {
			return bad("the term does not decode: %v", err)
		}
		if err := t.Validate(); err != nil {
			return err
		}
		if ch.Action == incidentlib.ActionReleaseTerm && w.tx.Bucket(bucketTaxonomy).Get(termKey(t.Kind, t.Slug)) != nil {
			return nil // this store's own release brought it already
		}
		return putTerm(w.tx, &t)
	case incidentlib.ActionAddOrganization, incidentlib.ActionRenameOrganization:
		var o incidentlib.Organization
		if err := json.Unmarshal(ch.After, &o); err != nil {
			return bad("the organization does not decode: %v", err)
		}
		if err := o.Validate(); err != nil {
			return err
		}
		if ch.Action == incidentlib.ActionAddOrganization {
			if err := w.tx.Bucket(bucketOrgAdded).Put([]byte(o.Slug), nil); err != nil {
				return err
			}
		}
		return putOrg(w.tx, o)
	case incidentlib.ActionMergeOrganizations:
		var into incidentlib.Organization
		from, ok := strings.CutPrefix(ch.Subject, "org:")
		if err := json.Unmarshal(ch.After, &into); err != nil || !ok || !incidentlib.ValidSlug(from) || !incidentlib.ValidSlug(into.Slug) || from == into.Slug {
			return bad("the merge does not name two organizations")
		}
		// The incidents come re-pointed through the change log; the merged
		// organization goes when its last incident leaves it (flush).
		if w.posting(postOrg(from)).IsEmpty() && w.posting(postRoleOrg(from)).IsEmpty() {
			if err := w.tx.Bucket(bucketOrgs).Delete([]byte(from)); err != nil {
				return err
			}
		}
		if err := w.tx.Bucket(bucketOrgAdded).Delete([]byte(from)); err != nil {
			return err
		}
		return aliasOrg(w.tx, from, into.Slug)
	case incidentlib.ActionGlossaryAdd, incidentlib.ActionGlossaryChange, incidentlib.ActionGlossaryRemove:
		return w.replayGlossary(ch) // glossary.go
	}
	return bad("unknown action %q", ch.Action)
}
