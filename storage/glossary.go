package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
)

// The glossary (package glossary) in the store, beside the taxonomy and
// in its room: the built-in glossary (Options.Glossary) seeds it when the
// store is made, or at the first writable open of an older store given
// one, and a newer release's entries are added at open (initGlossary);
// from then on the bucket is authoritative. An admin adds, changes
// and removes entries (TaxonomyWriter, in adminUpdate's transaction), each
// change an entry of the taxonomy's history, which replicas replay
// (replayGlossary). The glossary in memory is read at open and replaced
// when a change commits, before the new sequence is published; search
// asks for it on every query (Glossary, incidentlib.GlossaryReader) and
// recompiles its translator when the version moved.

var (
	bucketGlossary = []byte("glossary") // key (first English form, lower case) -> GlossaryEntry JSON
	// bucketGlossaryBuiltin holds every key of the built-in glossary the
	// store was given (initGlossary): key -> nil.
	bucketGlossaryBuiltin = []byte("glossarybuiltin")
	// metaGlossary is the glossary's version (u64): one more at every
	// change, a seed or a release's entries included (a new store's seed
	// makes it 1). Absent: never seeded nor written.
	metaGlossary = []byte("glossary_version")
)

// glossaryPrefix starts the subject of a glossary entry in the history.
const glossaryPrefix = "glossary:"

// Glossary returns the glossary as of the last committed change; see
// incidentlib.GlossaryReader. Callers must not change it.
func (st Taxonomies) Glossary(context.Context) (*incidentlib.Glossary, error) {
	return st.db.taxes.gloss.Load(), nil
}

// initGlossary runs in the open's write transaction: it creates the
// buckets and, given the built-in entries (Options.Glossary; none:
// nothing), stores each whose key the store was never given before
// (bucketGlossaryBuiltin) unless the glossary has an entry of that key (an
// admin's stays). The first time, that is the seed, written without
// history; afterwards they are a newer release's entries, each recorded
// in the history as an addition by incidentlib.ReleaseAuthor, as the
// taxonomy records a release's terms. An entry an admin removed or
// re-keyed is never brought back, and an open of a store as it is writes
// nothing. An entry of the seed that breaks the rules, or repeats a key,
// is left out.
func (db *DB) initGlossary(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketGlossary, bucketGlossaryBuiltin} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	if db.taxes.glossSeed == nil {
		return nil
	}
	seen, b := tx.Bucket(bucketGlossaryBuiltin), tx.Bucket(bucketGlossary)
	first, _ := seen.Cursor().First()
	n := countKeys(b)
	var added []incidentlib.GlossaryEntry
	for _, e := range seedEntries(db.taxes.glossSeed) {
		k := []byte(glossary.Key(&e))
		if seen.Get(k) != nil {
			continue
		}
		if err := seen.Put(k, nil); err != nil {
			return err
		}
		if b.Get(k) != nil || n >= glossary.MaxEntries {
			continue
		}
		if err := putGlossaryEntry(tx, &e); err != nil {
			return err
		}
		n++
		added = append(added, e)
	}
	if len(added) == 0 {
		return nil
	}
	if first != nil {
		now := db.Now().UTC().Format(time.RFC3339)
		seq := getU64(tx.Bucket(bucketMeta).Get(metaSeq))
		for i := range added {
			after, _ := json.Marshal(&added[i])
			ch := &incidentlib.TaxonomyChange{Seq: seq, At: now, Author: incidentlib.ReleaseAuthor, Action: incidentlib.ActionGlossaryAdd,
				Subject: glossaryPrefix + glossary.Key(&added[i]), After: after}
			if err := appendHistory(tx, ch); err != nil {
				return err
			}
		}
		db.fault.logger.Info("the glossary gained the built-in entries of this release", "file", db.path, "entries", len(added))
	}
	return bumpGlossary(tx)
}

// seedEntries returns the entries of seed that pass glossary.Validate,
// the first of each key, at most glossary.MaxEntries.
func seedEntries(seed []incidentlib.GlossaryEntry) []incidentlib.GlossaryEntry {
	out := make([]incidentlib.GlossaryEntry, 0, len(seed))
	keys := map[string]bool{}
	for _, e := range seed {
		k := glossary.Key(&e)
		if len(out) == glossary.MaxEntries || keys[k] || glossary.Validate(&e) != nil {
			continue
		}
		keys[k] = true
		out = append(out, e)
	}
	return out
}

// loadGlossary reads the glossary of tx into memory: a store not seeded
// yet (an older one opened read-only) reads as the seed a writable open
// would write, at version 0.
func (db *DB) loadGlossary(tx *bolt.Tx) error {
	g, err := glossaryOf(tx, db.taxes.glossSeed)
	if err != nil {
		return err
	}
	db.taxes.gloss.Store(g)
	return nil
}

// glossaryOf reads the glossary of tx; see loadGlossary.
func glossaryOf(tx *bolt.Tx, seed []incidentlib.GlossaryEntry) (*incidentlib.Glossary, error) {
	v := tx.Bucket(bucketMeta).Get(metaGlossary)
	b := tx.Bucket(bucketGlossary)
	if v == nil || b == nil {
		return &incidentlib.Glossary{Entries: seedEntries(seed)}, nil
	}
	g := &incidentlib.Glossary{Version: getU64(v)}
	err := b.ForEach(func(k, v []byte) error {
		var e incidentlib.GlossaryEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("storage: glossary entry %q is corrupt: %w", k, err)
		}
		g.Entries = append(g.Entries, e)
		return nil
	})
	return g, err
}

// glossaryChanged returns the glossary of tx when its version is not the
// one in memory (an admin's change or a replayed one), else nil.
func (db *DB) glossaryChanged(tx *bolt.Tx) (*incidentlib.Glossary, error) {
	cur := db.taxes.gloss.Load()
	if v := tx.Bucket(bucketMeta).Get(metaGlossary); cur != nil && v != nil && getU64(v) == cur.Version {
		return nil, nil
	}
	return glossaryOf(tx, db.taxes.glossSeed)
}

func putGlossaryEntry(tx *bolt.Tx, e *incidentlib.GlossaryEntry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketGlossary).Put([]byte(glossary.Key(e)), v)
}

// glossaryEntry returns the stored entry of key, or nil.
func glossaryEntry(tx *bolt.Tx, key string) (*incidentlib.GlossaryEntry, error) {
	v := tx.Bucket(bucketGlossary).Get([]byte(key))
	if v == nil {
		return nil, nil
	}
	e := new(incidentlib.GlossaryEntry)
	if err := json.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("storage: glossary entry %q is corrupt: %w", key, err)
	}
	return e, nil
}

// bumpGlossary moves the glossary's version on.
func bumpGlossary(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	return meta.Put(metaGlossary, u64key(getU64(meta.Get(metaGlossary))+1))
}

// changeGlossary, in w, removes the entry of from (if "" or absent,
// nothing) and stores e (if not nil), refusing past glossary.MaxEntries,
// and moves the version on.
func (w *writeTx) changeGlossary(from string, e *incidentlib.GlossaryEntry) error {
	b := w.tx.Bucket(bucketGlossary)
	if from != "" {
		if err := b.Delete([]byte(from)); err != nil {
			return err
		}
	}
	if e != nil {
		if b.Get([]byte(glossary.Key(e))) == nil && countKeys(b) >= glossary.MaxEntries {
			return incidentlib.Errorf(incidentlib.EINVALID, "the glossary holds %d entries, the most it may", glossary.MaxEntries)
		}
		if err := putGlossaryEntry(w.tx, e); err != nil {
			return err
		}
	}
	return bumpGlossary(w.tx)
}

// countKeys counts b's keys as the transaction sees them (Bucket.Stats
// reads the committed pages only).
func countKeys(b *bolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// cloneEntry copies e's slices, so that the caller's are never stored
// or changed.
func cloneEntry(e incidentlib.GlossaryEntry) incidentlib.GlossaryEntry {
	return incidentlib.GlossaryEntry{En: slices.Clone(e.En), Ko: slices.Clone(e.Ko), Note: e.Note}
}

// AddGlossaryEntry adds an entry; see incidentlib.TaxonomyWriter.
func (st Taxonomies) AddGlossaryEntry(ctx context.Context, author string, in incidentlib.GlossaryEntry) (*incidentlib.GlossaryEntry, error) {
	e := cloneEntry(in)
	if err := glossary.Validate(&e); err != nil {
		return nil, err
	}
	key := glossary.Key(&e)
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		if old, err := glossaryEntry(w.tx, key); err != nil || old != nil {
			if err != nil {
				return err
			}
			return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"en", "0"}, "the glossary has an entry of the key %q already: change it instead", key)
		}
		before := w.seq
		if err := w.changeGlossary("", &e); err != nil {
			return err
		}
		return w.history(author, incidentlib.ActionGlossaryAdd, glossaryPrefix+key, nil, &e, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// UpdateGlossaryEntry replaces an entry; see incidentlib.TaxonomyWriter.
// The key is compared in lower case. An entry given as it is stored
// changes nothing and records nothing.
func (st Taxonomies) UpdateGlossaryEntry(ctx context.Context, author, key string, in incidentlib.GlossaryEntry) (*incidentlib.GlossaryEntry, error) {
	if err := glossary.ValidateKey(key); err != nil {
		return nil, err
	}
	e := cloneEntry(in)
	if err := glossary.Validate(&e); err != nil {
		return nil, err
	}
	key = strings.ToLower(key)
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		old, err := oldGlossaryEntry(w.tx, key)
		if err != nil {
			return err
		}
		if nk := glossary.Key(&e); nk != key {
			if other, err := glossaryEntry(w.tx, nk); err != nil || other != nil {
				if err != nil {
					return err
				}
				return incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"en", "0"}, "the glossary has another entry of the key %q", nk)
			}
		}
		if sameEntry(old, &e) {
			return nil
		}
		before := w.seq
		if err := w.changeGlossary(key, &e); err != nil {
			return err
		}
		return w.history(author, incidentlib.ActionGlossaryChange, glossaryPrefix+key, old, &e, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// RemoveGlossaryEntry removes an entry; see incidentlib.TaxonomyWriter.
func (st Taxonomies) RemoveGlossaryEntry(ctx context.Context, author, key string) (*incidentlib.GlossaryEntry, error) {
	if err := glossary.ValidateKey(key); err != nil {
		return nil, err
	}
	key = strings.ToLower(key)
	var old *incidentlib.GlossaryEntry
	err := st.db.adminUpdate(ctx, func(w *writeTx) error {
		var err error
		if old, err = oldGlossaryEntry(w.tx, key); err != nil {
			return err
		}
		before := w.seq
		if err := w.changeGlossary(key, nil); err != nil {
			return err
		}
		return w.history(author, incidentlib.ActionGlossaryRemove, glossaryPrefix+key, old, nil, nil, before)
	})
	if err != nil {
		return nil, err
	}
	return old, nil
}

// oldGlossaryEntry returns the stored entry of key; ENOTFOUND (field
// "key") when there is none.
func oldGlossaryEntry(tx *bolt.Tx, key string) (*incidentlib.GlossaryEntry, error) {
	old, err := glossaryEntry(tx, key)
	if err == nil && old == nil {
		err = incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"key"}, "the glossary has no entry of the key %q", key)
	}
	return old, err
}

func sameEntry(a, b *incidentlib.GlossaryEntry) bool {
	return slices.Equal(a.En, b.En) && slices.Equal(a.Ko, b.Ko) && a.Note == b.Note
}

// replayGlossary gives the glossary the state a primary's history entry
// ch leaves it in: an addition or change stores ch.After (a change first
// removes the entry of its subject's key), a removal removes the entry of
// the subject's key. Entries that break glossary.Validate are EINVALID.
func (w *writeTx) replayGlossary(ch *incidentlib.TaxonomyChange) error {
	key, ok := strings.CutPrefix(ch.Subject, glossaryPrefix)
	if !ok || glossary.ValidateKey(key) != nil || strings.ToLower(key) != key {
		return incidentlib.Errorf(incidentlib.EINVALID, "the subject %q names no glossary entry", ch.Subject)
	}
	if ch.Action == incidentlib.ActionGlossaryRemove {
		return w.changeGlossary(key, nil)
	}
	var e incidentlib.GlossaryEntry
	if err := json.Unmarshal(ch.After, &e); err != nil {
		return incidentlib.Errorf(incidentlib.EINVALID, "the glossary entry does not decode: %v", err)
	}
	if err := glossary.Validate(&e); err != nil {
		return err
	}
	from := ""
	if ch.Action == incidentlib.ActionGlossaryChange {
		from = key
	} else if glossary.Key(&e) != key {
		return incidentlib.Errorf(incidentlib.EINVALID, "the subject %q is not the key of the entry added", ch.Subject)
	}
	return w.changeGlossary(from, &e)
}

// checkGlossary adds to check's problems the glossary entries that do not
// decode, break the rules of an entry or are stored under another key,
// and a glossary over glossary.MaxEntries.
func checkGlossary(tx *bolt.Tx, add func(string, ...any)) {
	b := tx.Bucket(bucketGlossary)
	if b == nil {
		return
	}
	n := 0
	_ = b.ForEach(func(k, v []byte) error {
		n++
		var e incidentlib.GlossaryEntry
		if err := json.Unmarshal(v, &e); err != nil {
			add("glossary: entry %q does not decode: %v", printable(string(k)), err)
			return nil
		}
		if err := glossary.Validate(&e); err != nil {
			add("glossary: entry %q: %s", printable(string(k)), incidentlib.ErrorMessage(err))
		} else if glossary.Key(&e) != string(k) {
			add("glossary: entry %q is stored under the key %q", glossary.Key(&e), printable(string(k)))
		}
		return nil
	})
	if n > glossary.MaxEntries {
		add("glossary: %d entries, more than %d", n, glossary.MaxEntries)
	}
}
