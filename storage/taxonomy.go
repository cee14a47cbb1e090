package storage

import (
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
	// The glossary (glossary.go): Options.Glossary, and the store's.
	glossSeed []incidentlib.GlossaryEntry
	gloss     atomic.Pointer[incidentlib.Glossary]
}

// Taxonomy returns the store's taxonomy as of the last committed change:
// the one writes are validated with. Callers must not change it.
func (st Taxonomies) Taxonomy() *incidentlib.Taxonomy { return st.db.taxes.cur.Load() }

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
