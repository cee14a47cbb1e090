package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The taxonomy after a store's creation. The built-in taxonomy
// (Options.Taxonomy, seeds/taxonomy.json) seeds a new store; from then on
// the taxonomy bucket is authoritative: an open writes only the built-in
// terms the store lacks (a newer release's), never a label an admin
// changed, and the taxonomy the store validates with (Taxonomy,
// RecordRules) is read from the bucket at open and replaced when an
// admin's change commits, before the new sequence is published (so a
// cache keyed by the sequence never keeps an answer of the old taxonomy
// under the new sequence).

// Buckets of the taxonomy's and the organizations' administration,
// created in the open's one transaction (initTaxonomy).
var (
	bucketTaxHistory = []byte("taxhistory") // u64 entry number -> TaxonomyChange JSON
	bucketOrgAliases = []byte("orgaliases") // slug merged away -> slug of the organization that absorbed it
	bucketOrgAdded   = []byte("orgadded")   // slug -> nil: organizations an admin added (kept without incidents)

	taxBuckets = [][]byte{bucketTaxHistory, bucketOrgAliases, bucketOrgAdded}
)

// taxState is the store's taxonomy and organization aliases in memory.
type taxState struct {
	builtin    *incidentlib.Taxonomy // Options.Taxonomy
	cur        atomic.Pointer[incidentlib.Taxonomy]
	orgAliases atomic.Pointer[map[string]string]
}

// Taxonomy returns the store's taxonomy as of the last committed change:
// the one writes are validated with. Callers must not change it.
func (db *DB) Taxonomy() *incidentlib.Taxonomy { return db.taxes.cur.Load() }

// initTaxonomy runs in the open's write transaction: it creates the
// administration's buckets and seeds a new store's taxonomy with the
// built-in terms, or adds to an existing store the built-in terms it lacks
// (each with a RELEASE_TERM entry in the history).
func (db *DB) initTaxonomy(tx *bolt.Tx) error {
	for _, name := range taxBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	b := tx.Bucket(bucketTaxonomy)
	if k, _ := b.Cursor().First(); k == nil {
		for _, t := range db.taxes.builtin.Terms {
			if err := putTerm(tx, t); err != nil {
				return err
			}
		}
		return nil
	}
	stored, err := readTerms(tx)
	if err != nil {
		return err
	}
	added := missingBuiltin(stored, db.taxes.builtin)
	if len(added) == 0 {
		return nil
	}
	now := db.Now().UTC().Format(time.RFC3339)
	seq := getU64(tx.Bucket(bucketMeta).Get(metaSeq))
	for _, t := range added {
		if err := putTerm(tx, t); err != nil {
			return err
		}
		after, _ := json.Marshal(t)
		ch := &incidentlib.TaxonomyChange{Seq: seq, At: now, Author: incidentlib.ReleaseAuthor, Action: incidentlib.ActionReleaseTerm,
			Subject: t.ID(), After: after}
		if err := appendHistory(tx, ch); err != nil {
			return err
		}
	}
	db.fault.logger.Info("the taxonomy gained the built-in terms the store lacked", "file", db.path, "terms", len(added))
	return nil
}

// missingBuiltin returns copies of the built-in terms that stored lacks,
// leaving out a term whose slug stored has as an alias, and the aliases
// stored already uses.
func missingBuiltin(stored []*incidentlib.Term, builtin *incidentlib.Taxonomy) []*incidentlib.Term {
	used := map[incidentlib.TermKey]bool{}
	for _, t := range stored {
		used[incidentlib.TermKey{Kind: t.Kind, Slug: t.Slug}] = true
		for _, a := range t.Aliases {
			used[incidentlib.TermKey{Kind: t.Kind, Slug: a}] = true
		}
	}
	var out []*incidentlib.Term
	for _, t := range builtin.Terms {
		if used[incidentlib.TermKey{Kind: t.Kind, Slug: t.Slug}] {
			continue
		}
		c := *t
		c.Aliases = slices.DeleteFunc(slices.Clone(t.Aliases), func(a string) bool { return used[incidentlib.TermKey{Kind: t.Kind, Slug: a}] })
		if len(c.Aliases) == 0 {
			c.Aliases = nil
		}
		used[incidentlib.TermKey{Kind: t.Kind, Slug: t.Slug}] = true
		for _, a := range c.Aliases {
			used[incidentlib.TermKey{Kind: t.Kind, Slug: a}] = true
		}
		out = append(out, &c)
	}
	return out
}

// loadTaxonomy reads the taxonomy and the organization aliases of tx into
// memory. A store without a taxonomy bucket's terms (opened read-only
// before its first writable open) reads as the built-in taxonomy; one
// lacking built-in terms reads with them, as a writable open would add
// them.
func (db *DB) loadTaxonomy(tx *bolt.Tx) error {
	tax, err := taxonomyOf(tx, db.taxes.builtin)
	if err != nil {
		return err
	}
	aliases, err := readOrgAliases(tx)
	if err != nil {
		return err
	}
	db.taxes.cur.Store(tax)
	db.taxes.orgAliases.Store(&aliases)
	return nil
}

// taxonomyOf reads the taxonomy of tx, with the built-in terms it lacks.
func taxonomyOf(tx *bolt.Tx, builtin *incidentlib.Taxonomy) (*incidentlib.Taxonomy, error) {
	stored, err := readTerms(tx)
	if err != nil {
		return nil, err
	}
	terms := append(stored, missingBuiltin(stored, builtin)...)
	tax, err := incidentlib.NewTaxonomy(terms)
	if err != nil {
		return nil, fmt.Errorf("storage: the stored taxonomy: %w", err)
	}
	return tax, nil
}

// readTerms decodes every term of the taxonomy bucket, in key order.
func readTerms(tx *bolt.Tx) ([]*incidentlib.Term, error) {
	var out []*incidentlib.Term
	err := tx.Bucket(bucketTaxonomy).ForEach(func(k, v []byte) error {
		t := new(incidentlib.Term)
		if err := json.Unmarshal(v, t); err != nil {
			return fmt.Errorf("storage: taxonomy term %q is corrupt: %w", k, err)
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

func termKey(kind incidentlib.TermKind, slug string) []byte {
	return []byte(string(kind) + "\x00" + slug)
}

func putTerm(tx *bolt.Tx, t *incidentlib.Term) error {
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTaxonomy).Put(termKey(t.Kind, t.Slug), v)
}

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
// rolls everything back: a refusal writes nothing. After the commit the
// taxonomy and the organization aliases in memory are replaced, then the
// new sequence is published.
func (db *DB) adminUpdate(ctx context.Context, fn func(w *writeTx) error) error {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	if err := db.refuseWrite(); err != nil {
		return err
	}
	var (
		seq     uint64
		wrote   bool
		tax     *incidentlib.Taxonomy
		aliases map[string]string
	)
	start := time.Now()
	err := db.updateGuarded(func(tx *bolt.Tx) error {
		w := newWriteTx(db, tx)
		before := w.seq
		if err := fn(w); err != nil {
			return err
		}
		if wrote = w.seq != before; !wrote {
			return nil
		}
		if err := w.flush(); err != nil {
			return err
		}
		seq = w.seq
		var err error
		if tax, err = taxonomyOf(tx, db.taxes.builtin); err != nil {
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

func validKind(kind incidentlib.TermKind) error {
	if !kind.IsValid() {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"kind"}, "kind %q is not one of domain, symptom, component, root_cause, contributing, severity", kind)
	}
	return nil
}

// AddTerm adds a term; see incidentlib.TaxonomyAdmin.
func (db *DB) AddTerm(ctx context.Context, author string, in incidentlib.Term) (*incidentlib.Term, error) {
	t := in
	t.Deprecated = false
	t.Aliases = slices.Clone(in.Aliases)
	if len(t.Aliases) == 0 {
		t.Aliases = nil
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	err := db.adminUpdate(ctx, func(w *writeTx) error {
		tax, err := taxonomyOf(w.tx, db.taxes.builtin)
		if err != nil {
			return err
		}
		if r := tax.Resolve(t.Kind, t.Slug); r != nil {
			if r.Slug == t.Slug {
				return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"slug"}, "%s %q is already a term of the taxonomy", t.Kind, t.Slug)
			}
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"slug"}, "%s %q is an alias of the term %q", t.Kind, t.Slug, r.Slug)
		}
		if err := aliasConflicts(tax, &t, t.Aliases, true); err != nil {
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

// aliasConflicts refuses an alias of aliases (field aliases.N) that is a
// term's slug or another term's alias, or one listed twice; with
// includeSelf, also the term's own slug.
func aliasConflicts(tax *incidentlib.Taxonomy, t *incidentlib.Term, aliases []string, includeSelf bool) error {
	var es incidentlib.Errors
	seen := map[string]bool{}
	for n, a := range aliases {
		field := []string{"aliases", fmt.Sprint(n)}
		switch r := tax.Resolve(t.Kind, a); {
		case seen[a] || (includeSelf && a == t.Slug):
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

// UpdateTerm changes a term's labels and descriptions; see
// incidentlib.TaxonomyAdmin.
func (db *DB) UpdateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, u incidentlib.TermUpdate) (*incidentlib.Term, error) {
	if err := validKind(kind); err != nil {
		return nil, err
	}
	if err := incidentlib.ValidateTermUpdate(u); err != nil {
		return nil, err
	}
	var out *incidentlib.Term
	err := db.adminUpdate(ctx, func(w *writeTx) error {
		t, tax, err := termIn(w, kind, slug)
		if err != nil {
			return err
		}
		old := tax.Term(kind, slug)
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
		out = t
		if sameText(t.Label, old.Label) && sameText(t.Description, old.Description) {
			return nil // nothing changes
		}
		before := w.seq
		if err := putTerm(w.tx, t); err != nil {
			return err
		}
		return w.history(author, incidentlib.ActionUpdateTerm, t.ID(), old, t, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AddTermAliases adds aliases to a term; see incidentlib.TaxonomyAdmin.
func (db *DB) AddTermAliases(ctx context.Context, author string, kind incidentlib.TermKind, slug string, aliases []string) (*incidentlib.Term, error) {
	if err := validKind(kind); err != nil {
		return nil, err
	}
	if err := incidentlib.ValidateAliases(aliases); err != nil {
		return nil, err
	}
	var out *incidentlib.Term
	err := db.adminUpdate(ctx, func(w *writeTx) error {
		t, tax, err := termIn(w, kind, slug)
		if err != nil {
			return err
		}
		if err := aliasConflicts(tax, t, aliases, false); err != nil {
			return err
		}
		old := tax.Term(kind, slug)
		for _, a := range aliases {
			if a != t.Slug && !slices.Contains(t.Aliases, a) {
				t.Aliases = append(t.Aliases, a)
			}
		}
		out = t
		if len(t.Aliases) == len(old.Aliases) {
			return nil // every alias was the term's already
		}
		if len(t.Aliases) > incidentlib.MaxAliases {
			return incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"aliases"}, "the term would have %d aliases, more than the limit of %d", len(t.Aliases), incidentlib.MaxAliases)
		}
		before := w.seq
		if err := putTerm(w.tx, t); err != nil {
			return err
		}
		return w.history(author, incidentlib.ActionAddAliases, t.ID(), old, t, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeprecateTerm deprecates a term or takes the deprecation back; see
// incidentlib.TaxonomyAdmin.
func (db *DB) DeprecateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, deprecated bool) (*incidentlib.Term, error) {
	if err := validKind(kind); err != nil {
		return nil, err
	}
	var out *incidentlib.Term
	err := db.adminUpdate(ctx, func(w *writeTx) error {
		t, tax, err := termIn(w, kind, slug)
		if err != nil {
			return err
		}
		out = t
		if t.Deprecated == deprecated {
			return nil
		}
		t.Deprecated = deprecated
		action := incidentlib.ActionDeprecateTerm
		if !deprecated {
			action = incidentlib.ActionUndeprecateTerm
		}
		before := w.seq
		if err := putTerm(w.tx, t); err != nil {
			return err
		}
		return w.history(author, action, t.ID(), tax.Term(kind, slug), t, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TaxonomyHistory returns the history of the taxonomy and the
// organizations, newest first; see incidentlib.TaxonomyAdmin. Cursors are
// entry numbers.
func (db *DB) TaxonomyHistory(ctx context.Context, p incidentlib.PageArgs) (*incidentlib.TaxonomyChangePage, error) {
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
	err = db.view(ctx, func(tx *bolt.Tx) error {
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
