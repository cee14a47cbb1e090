package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// An admin's changes of the taxonomy (orgadmin.go has the organizations'):
// each in a write transaction of its own (adminUpdate), recorded in the
// taxonomy's history.

// appendHistory numbers ch (the last entry's number plus one) and stores it.
func appendHistory(tx *bolt.Tx, ch *incidentlib.TaxonomyChange) error {
	b := tx.Bucket(bucketTaxHistory)
	ch.Number = 1
	if k, _ := b.Cursor().Last(); k != nil {
		ch.Number = getU64(k) + 1
	}
	v, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	return b.Put(u64key(ch.Number), v)
}

// adminUpdate runs fn, an admin's change of the taxonomy or the
// organizations, in a write transaction of its own. An error from fn
// rolls everything back: a refusal writes nothing. Under a log position
// (a cluster's write) the change is stamped with the position's time and
// the position is stored in the same transaction, also when the change
// writes nothing; a position at or below the stored one is refused.
// After the commit the taxonomy, the organization aliases and the
// glossary (when it changed) in memory are replaced, then the new
// sequence is published.
func (db *DB) adminUpdate(ctx context.Context, fn func(w *writeTx) error) error {
	if err := db.writable(ctx); err != nil {
		return err
	}
	var (
		seq     uint64
		wrote   bool
		tax     *incidentlib.Taxonomy
		aliases map[string]string
		gloss   *incidentlib.Glossary // nil: the glossary did not change
	)
	start := time.Now()
	err := db.updateGuarded(func(tx *bolt.Tx) error {
		w := newWriteTx(db, tx)
		logged, err := w.startLogged(ctx) // a cluster log's write (cluster.go)
		if err != nil {
			return err
		}
		before := w.seq
		if err := fn(w); err != nil {
			return err
		}
		if wrote = w.seq != before; !wrote {
			return w.endLogged(logged, nil) // the position moves all the same
		}
		if err := w.flush(); err != nil {
			return err
		}
		if err := w.endLogged(logged, nil); err != nil {
			return err
		}
		seq = w.seq
		if tax, err = taxonomyOf(tx, db.taxes.builtin); err != nil {
			return err
		}
		if gloss, err = db.glossaryChanged(tx); err != nil { // glossary.go
			return err
		}
		aliases, err = readOrgAliases(tx)
		return err
	})
	if err := db.writeError(err); err != nil {
		return err
	}
	if !wrote {
		return nil
	}
	db.taxes.cur.Store(tax)
	db.taxes.orgAliases.Store(&aliases)
	if gloss != nil {
		db.taxes.gloss.Store(gloss)
	}
	db.observeCommit(time.Since(start))
	db.publish(seq)
	return nil
}

// history records one change at the transaction's sequence, which it
// advances when the change wrote no incident (the sequence then still
// tells caches keyed by it that the store changed).
func (w *writeTx) history(author string, action incidentlib.TaxonomyAction, subject string, before, after any, incidents []string, seqBefore uint64) error {
	if w.seq == seqBefore {
		w.seq++
	}
	ch := &incidentlib.TaxonomyChange{Seq: w.seq, At: w.now, Author: author, Action: action, Subject: subject, Incidents: incidents}
	if before != nil {
		ch.Before, _ = json.Marshal(before)
	}
	if after != nil {
		ch.After, _ = json.Marshal(after)
	}
	return appendHistory(w.tx, ch)
}

// termIn returns a copy of the stored term of kind with slug, and the
// taxonomy of the transaction; ENOTFOUND (field "slug") when there is no
// such term.
func termIn(w *writeTx, kind incidentlib.TermKind, slug string) (*incidentlib.Term, *incidentlib.Taxonomy, error) {
	tax, err := taxonomyOf(w.tx, w.db.taxes.builtin)
	if err != nil {
		return nil, nil, err
	}
	t := tax.Term(kind, slug)
	if t == nil {
		msg := fmt.Sprintf("%s %q is not a term of the taxonomy", kind, slug)
		if r := tax.Resolve(kind, slug); r != nil {
			msg += fmt.Sprintf(" (it is an alias of %q)", r.Slug)
		}
		return nil, nil, incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"slug"}, "%s", msg)
	}
	c := *t
	c.Aliases = slices.Clone(t.Aliases)
	return &c, tax, nil
}

// AddTerm adds a term; see incidentlib.TaxonomyAdmin.
func (st Taxonomies) AddTerm(ctx context.Context, author string, in incidentlib.Term) (*incidentlib.Term, error) {
	t := in
	t.Deprecated = false
	t.Aliases = slices.Clone(in.Aliases)
	if len(t.Aliases) == 0 {
		t.Aliases = nil
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		tax, err := taxonomyOf(w.tx, st.db.taxes.builtin)
		if err != nil {
			return err
		}
		if r := tax.Resolve(t.Kind, t.Slug); r != nil {
			if r.Slug == t.Slug {
				return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"slug"}, "%s %q is already a term of the taxonomy", t.Kind, t.Slug)
			}
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"slug"}, "%s %q is an alias of the term %q", t.Kind, t.Slug, r.Slug)
		}
		if err := aliasConflicts(tax, &t, t.Aliases); err != nil {
			return err
		}
		before := w.seq
		if err := putTerm(w.tx, &t); err != nil {
			return err
		}
		return w.history(author, incidentlib.ActionAddTerm, t.ID(), nil, &t, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// aliasConflicts refuses an alias of aliases (field aliases.N) that is the
// term's own slug (EINVALID: it would resolve to itself, and was dropped
// without a word by AddTermAliases), a term's slug or another term's
// alias, or one listed twice.
func aliasConflicts(tax *incidentlib.Taxonomy, t *incidentlib.Term, aliases []string) error {
	var es incidentlib.Errors
	seen := map[string]bool{}
	for n, a := range aliases {
		field := []string{"aliases", fmt.Sprint(n)}
		switch r := tax.Resolve(t.Kind, a); {
		case a == t.Slug:
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, field, "aliases[%d] %q is the term's own slug", n, a))
		case seen[a]:
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, field, "aliases[%d] %q is listed twice", n, a))
		case r != nil && r.Slug != t.Slug:
			es = append(es, incidentlib.FieldErrorf(incidentlib.ECONFLICT, field, "aliases[%d] %q already resolves to the %s term %q", n, a, t.Kind, r.Slug))
		}
		seen[a] = true
	}
	if len(es) > 0 {
		return es
	}
	return nil
}

// updateTerm changes the stored term kind/slug in one admin write, once
// the kind and then argErr (the caller's check of its own arguments) pass:
// change edits t, a copy of old, and returns the action to record, or ""
// when nothing changes. The term is then stored and the change goes into
// the history with the term before and after.
func (db *DB) updateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, argErr error,
	change func(t, old *incidentlib.Term, tax *incidentlib.Taxonomy) (incidentlib.TaxonomyAction, error)) (*incidentlib.Term, error) {
	if err := incidentlib.ValidateTermKind(kind); err != nil {
		return nil, err
	}
	if argErr != nil {
		return nil, argErr
	}
	var out *incidentlib.Term
	err := db.adminUpdate(ctx, func(w *writeTx) error {
		t, tax, err := termIn(w, kind, slug)
		if err != nil {
			return err
		}
		old := tax.Term(kind, slug)
		action, err := change(t, old, tax)
		if err != nil {
			return err
		}
		out = t
		if action == "" {
			return nil // nothing changes
		}
		before := w.seq
		if err := putTerm(w.tx, t); err != nil {
			return err
		}
		return w.history(author, action, t.ID(), old, t, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateTerm changes a term's labels and descriptions; see
// incidentlib.TaxonomyAdmin.
func (st Taxonomies) UpdateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, u incidentlib.TermUpdate) (*incidentlib.Term, error) {
	return st.db.updateTerm(ctx, author, kind, slug, incidentlib.ValidateTermUpdate(u), func(t, old *incidentlib.Term, _ *incidentlib.Taxonomy) (incidentlib.TaxonomyAction, error) {
		merge := func(dst *incidentlib.Text, src *incidentlib.Text) {
			if src == nil {
				return
			}
			if src.En != "" {
				dst.En = src.En
			}
			if src.Ko != "" {
				dst.Ko = src.Ko
			}
		}
		merge(&t.Label, u.Label)
		merge(&t.Description, u.Description)
		if sameText(t.Label, old.Label) && sameText(t.Description, old.Description) {
			return "", nil
		}
		return incidentlib.ActionUpdateTerm, nil
	})
}

// AddTermAliases adds aliases to a term; see incidentlib.TaxonomyAdmin.
func (st Taxonomies) AddTermAliases(ctx context.Context, author string, kind incidentlib.TermKind, slug string, aliases []string) (*incidentlib.Term, error) {
	return st.db.updateTerm(ctx, author, kind, slug, incidentlib.ValidateAliases(aliases), func(t, old *incidentlib.Term, tax *incidentlib.Taxonomy) (incidentlib.TaxonomyAction, error) {
		if err := aliasConflicts(tax, t, aliases); err != nil {
			return "", err
		}
		for _, a := range aliases {
			if a != t.Slug && !slices.Contains(t.Aliases, a) {
				t.Aliases = append(t.Aliases, a)
			}
		}
		if len(t.Aliases) == len(old.Aliases) {
			return "", nil // every alias was the term's already
		}
		if len(t.Aliases) > incidentlib.MaxAliases {
			return "", incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"aliases"}, "the term would have %d aliases, more than the limit of %d", len(t.Aliases), incidentlib.MaxAliases)
		}
		return incidentlib.ActionAddAliases, nil
	})
}

// DeprecateTerm deprecates a term or takes the deprecation back; see
// incidentlib.TaxonomyAdmin.
func (st Taxonomies) DeprecateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, deprecated bool) (*incidentlib.Term, error) {
	return st.db.updateTerm(ctx, author, kind, slug, nil, func(t, _ *incidentlib.Term, _ *incidentlib.Taxonomy) (incidentlib.TaxonomyAction, error) {
		if t.Deprecated == deprecated {
			return "", nil
		}
		t.Deprecated = deprecated
		if !deprecated {
			return incidentlib.ActionUndeprecateTerm, nil
		}
		return incidentlib.ActionDeprecateTerm, nil
	})
}

// TaxonomyHistory returns the history of the taxonomy and the
// organizations, newest first; see incidentlib.TaxonomyAdmin. Cursors are
// entry numbers.
func (st Taxonomies) TaxonomyHistory(ctx context.Context, p incidentlib.PageArgs) (*incidentlib.TaxonomyChangePage, error) {
	if p.Last != nil || p.Before != nil {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "the history pages forward only: give first and after")
	}
	n, _, err := pageSize(p)
	if err != nil {
		return nil, err
	}
	var after []byte
	if p.After != nil {
		b, err := decodeCursorRaw(*p.After)
		if err != nil || len(b) != 10 || b[1] != 'h' {
			return nil, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q is malformed", *p.After)
		}
		after = b[2:]
	}
	page := &incidentlib.TaxonomyChangePage{}
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTaxHistory)
		if b == nil { // a store written before the history, opened read-only
			return nil
		}
		page.TotalCount = b.Stats().KeyN
		c := b.Cursor()
		var k, v []byte
		switch {
		case after == nil:
			k, v = c.Last()
		default:
			if k, _ = c.Seek(after); k == nil {
				k, v = c.Last() // every entry is older than after
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = c.Prev() {
			if len(page.Changes) == n {
				page.HasNextPage = true
				break
			}
			ch := new(incidentlib.TaxonomyChange)
			if err := json.Unmarshal(v, ch); err != nil {
				return fmt.Errorf("storage: history entry %d is corrupt: %w", getU64(k), err)
			}
			page.Changes = append(page.Changes, ch)
			page.Cursors = append(page.Cursors, encodeCursor('h', k))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

func sameText(a, b incidentlib.Text) bool { return a.En == b.En && a.Ko == b.Ko }
