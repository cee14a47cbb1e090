package storage_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// builtinGlossary is the built-in glossary, as serve seeds a store with.
func builtinGlossary(tb testing.TB) []incidentlib.GlossaryEntry {
	tb.Helper()
	g, err := seeds.Glossary(seeds.MustTaxonomy())
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func openGlossaryStore(tb testing.TB, path string, seed []incidentlib.GlossaryEntry) *storage.DB {
	tb.Helper()
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), Glossary: seed})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func glossaryNow(tb testing.TB, db *storage.DB) *incidentlib.Glossary {
	tb.Helper()
	g, err := db.Taxonomies().Glossary(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func entryOf(g *incidentlib.Glossary, key string) *incidentlib.GlossaryEntry {
	for i := range g.Entries {
		if glossary.Key(&g.Entries[i]) == key {
			return &g.Entries[i]
		}
	}
	return nil
}

// TestGlossaryInTheStore: a new store holds the built-in glossary; an
// admin's addition, change and removal each move the version, are in the
// taxonomy's history and survive a reopen; refusals (an invalid entry, a
// key taken, an unknown key) write nothing; check finds a corrupt entry.
func TestGlossaryInTheStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "g.db")
	builtin := builtinGlossary(t)
	db := openGlossaryStore(t, path, builtin)
	g := glossaryNow(t, db)
	if len(g.Entries) != len(builtin) || g.Version != 1 {
		t.Fatalf("seeded: %d entries at version %d, want %d at 1", len(g.Entries), g.Version, len(builtin))
	}
	ta := db.Taxonomies()
	add := incidentlib.GlossaryEntry{En: []string{"Noisy neighbor"}, Ko: []string{"시끄러운 이웃"}, Note: "a burst of retries"}
	if _, err := ta.AddGlossaryEntry(ctx, "boss", add); err != nil {
		t.Fatal(err)
	}
	if g := glossaryNow(t, db); g.Version != 2 || entryOf(g, "noisy neighbor") == nil {
		t.Fatalf("after the addition: version %d", g.Version)
	}

	seq := db.Incidents().Seq()
	for name, tc := range map[string]struct {
		run  func() error
		code string
		path string
	}{
		"Invalid": {func() error {
			_, err := ta.AddGlossaryEntry(ctx, "boss", incidentlib.GlossaryEntry{En: []string{"ok"}, Ko: []string{"배포", "배포"}})
			return err
		}, incidentlib.EINVALID, "ko.1"},
		"KeyTaken": {func() error {
			_, err := ta.AddGlossaryEntry(ctx, "boss", incidentlib.GlossaryEntry{En: []string{"noisy NEIGHBOR"}, Ko: []string{"폭주"}})
			return err
		}, incidentlib.ECONFLICT, "en.0"},
		"ChangeOntoAnother": {func() error {
			_, err := ta.UpdateGlossaryEntry(ctx, "boss", "noisy neighbor", incidentlib.GlossaryEntry{En: []string{"rollout"}, Ko: []string{"배포"}})
			return err
		}, incidentlib.ECONFLICT, "en.0"},
		"ChangeUnknown": {func() error {
			_, err := ta.UpdateGlossaryEntry(ctx, "boss", "no such entry", add)
			return err
		}, incidentlib.ENOTFOUND, "key"},
		"RemoveUnknown": {func() error {
			_, err := ta.RemoveGlossaryEntry(ctx, "boss", "no such entry")
			return err
		}, incidentlib.ENOTFOUND, "key"},
		"KeyTooLong": {func() error {
			_, err := ta.RemoveGlossaryEntry(ctx, "boss", strings.Repeat("k", 10_000))
			return err
		}, incidentlib.EINVALID, "key"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.run()
			if incidentlib.ErrorCode(err) != tc.code || strings.Join(incidentlib.ErrorField(err), ".") != tc.path {
				t.Fatalf("got %s at %v (%v), want %s at %s", incidentlib.ErrorCode(err), incidentlib.ErrorField(err), err, tc.code, tc.path)
			}
			if g := glossaryNow(t, db); g.Version != 2 || db.Incidents().Seq() != seq {
				t.Fatalf("a refusal wrote: version %d, sequence %d -> %d", g.Version, seq, db.Incidents().Seq())
			}
		})
	}

	changed := incidentlib.GlossaryEntry{En: []string{"zombie process", "noisy neighbor"}, Ko: []string{"좀비 프로세스"}}
	if _, err := ta.UpdateGlossaryEntry(ctx, "boss", "Noisy Neighbor", changed); err != nil {
		t.Fatal(err)
	}
	if _, err := ta.UpdateGlossaryEntry(ctx, "boss", "zombie process", changed); err != nil { // as it is: nothing
		t.Fatal(err)
	}
	if _, err := ta.RemoveGlossaryEntry(ctx, "boss", "rollout"); err != nil {
		t.Fatal(err)
	}
	g = glossaryNow(t, db)
	if g.Version != 4 || entryOf(g, "noisy neighbor") != nil || entryOf(g, "rollout") != nil || !slices.Equal(entryOf(g, "zombie process").Ko, changed.Ko) {
		t.Fatalf("after the change and the removal: version %d", g.Version)
	}
	h, err := ta.TaxonomyHistory(ctx, incidentlib.PageArgs{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range h.Changes {
		got = append(got, string(c.Action)+" "+c.Subject+" "+c.Author)
	}
	want := []string{"GLOSSARY_REMOVE glossary:rollout boss", "GLOSSARY_CHANGE glossary:noisy neighbor boss", "GLOSSARY_ADD glossary:noisy neighbor boss"}
	if !slices.Equal(got, want) {
		t.Fatalf("history:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if problems, err := db.Maintenance().Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}

	db.Close()
	db = openGlossaryStore(t, path, builtin) // the seed is not written again
	if g2 := glossaryNow(t, db); g2.Version != 4 || len(g2.Entries) != len(g.Entries) || entryOf(g2, "rollout") != nil {
		t.Fatalf("reopened: version %d, %d entries", g2.Version, len(g2.Entries))
	}
	db.Close()

	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("glossary"))
		if err := b.Put([]byte("broken"), []byte(`{"en":["broken"]}`)); err != nil {
			return err
		}
		return b.Put([]byte("elsewhere"), []byte(`{"en":["misfiled"],"ko":["오류"]}`))
	}); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db = openGlossaryStore(t, path, builtin)
	problems, err := db.Maintenance().Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(problems, "\n")
	if !strings.Contains(joined, `glossary: entry "broken"`) || !strings.Contains(joined, `stored under the key "elsewhere"`) {
		t.Fatalf("check did not find the broken entries:\n%s", joined)
	}
}

// TestGlossarySeededOnce: a store opened without a glossary holds none
// and is seeded at its first open with one; a store an admin wrote to
// first is never seeded over.
func TestGlossarySeededOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	builtin := builtinGlossary(t)

	older := filepath.Join(dir, "older.db")
	db := openGlossaryStore(t, older, nil)
	if g := glossaryNow(t, db); len(g.Entries) != 0 || g.Version != 0 {
		t.Fatalf("without a seed: %d entries, version %d", len(g.Entries), g.Version)
	}
	db.Close()
	ro, err := storage.Open(older, storage.Options{Taxonomy: seeds.MustTaxonomy(), Glossary: builtin, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := glossaryNow(t, ro); len(g.Entries) != len(builtin) || g.Version != 0 {
		t.Fatalf("read-only, before its upgrade: %d entries, version %d", len(g.Entries), g.Version)
	}
	ro.Close()
	db = openGlossaryStore(t, older, builtin)
	if g := glossaryNow(t, db); len(g.Entries) != len(builtin) || g.Version != 1 {
		t.Fatalf("upgraded: %d entries, version %d", len(g.Entries), g.Version)
	}
	db.Close()

	written := filepath.Join(dir, "written.db")
	db = openGlossaryStore(t, written, nil)
	if _, err := db.Taxonomies().AddGlossaryEntry(ctx, "boss", incidentlib.GlossaryEntry{En: []string{"rollout"}, Ko: []string{"출시"}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openGlossaryStore(t, written, builtin)
	g := glossaryNow(t, db)
	if len(g.Entries) != len(builtin) || entryOf(g, "rollout").Ko[0] != "출시" {
		t.Fatalf("seeded beside an admin's entry: %d entries, rollout %v", len(g.Entries), entryOf(g, "rollout"))
	}
	if h, _ := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{}); h.TotalCount != 1 {
		t.Fatalf("the seed wrote %d history entries, want the admin's 1", h.TotalCount)
	}
}

// TestGlossaryRelease: a newer release's built-in entries reach a store
// seeded by an older one at open, each an addition by "release" in the
// history; an entry an admin removed is not brought back, and an open of
// the store as it is writes nothing.
func TestGlossaryRelease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	builtin := builtinGlossary(t)
	older := builtin[:len(builtin)-1]
	db := openGlossaryStore(t, path, older)
	if _, err := db.Taxonomies().RemoveGlossaryEntry(ctx, "boss", "rollout"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openGlossaryStore(t, path, builtin)
	g := glossaryNow(t, db)
	last := glossary.Key(&builtin[len(builtin)-1])
	if entryOf(g, last) == nil || entryOf(g, "rollout") != nil || len(g.Entries) != len(builtin)-1 || g.Version != 3 {
		t.Fatalf("after the newer release: %d entries at version %d, %s %v, rollout %v", len(g.Entries), g.Version, last, entryOf(g, last), entryOf(g, "rollout"))
	}
	h, err := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount != 2 || h.Changes[0].Author != incidentlib.ReleaseAuthor || h.Changes[0].Action != incidentlib.ActionGlossaryAdd || h.Changes[0].Subject != "glossary:"+last {
		t.Fatalf("the history: %d entries, newest %+v", h.TotalCount, h.Changes[0])
	}
	db.Close()
	db = openGlossaryStore(t, path, builtin)
	if g2 := glossaryNow(t, db); g2.Version != g.Version {
		t.Fatalf("an open as it is moved the version to %d", g2.Version)
	}
	if h2, _ := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{}); h2.TotalCount != 2 {
		t.Fatalf("an open as it is wrote history: %d entries", h2.TotalCount)
	}
}

// TestGlossaryReplay: a follower that applies the primary's taxonomy
// history gets the same glossary; an entry that breaks the rules is
// refused whole.
func TestGlossaryReplay(t *testing.T) {
	ctx := context.Background()
	builtin := builtinGlossary(t)
	p := openGlossaryStore(t, filepath.Join(t.TempDir(), "p.db"), builtin)
	r := openGlossaryStore(t, filepath.Join(t.TempDir(), "r.db"), builtin)
	must := func(_ *incidentlib.GlossaryEntry, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Taxonomies().AddGlossaryEntry(ctx, "boss", incidentlib.GlossaryEntry{En: []string{"noisy neighbor"}, Ko: []string{"시끄러운 이웃"}}))
	must(p.Taxonomies().UpdateGlossaryEntry(ctx, "boss", "noisy neighbor", incidentlib.GlossaryEntry{En: []string{"zombie process"}, Ko: []string{"좀비 프로세스"}}))
	must(p.Taxonomies().RemoveGlossaryEntry(ctx, "boss", "rollout"))
	entries, err := p.Taxonomies().TaxonomyChangesAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	bad := *entries[0]
	bad.After = json.RawMessage(`{"en":["noisy neighbor"],"ko":[]}`)
	if _, err := r.Taxonomies().ApplyTaxonomyChanges(ctx, 0, []*incidentlib.TaxonomyChange{&bad}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("an entry without Korean: %v", err)
	}
	if _, err := r.Taxonomies().ApplyTaxonomyChanges(ctx, 0, entries); err != nil {
		t.Fatal(err)
	}
	gj := func(db *storage.DB) string {
		b, _ := json.Marshal(glossaryNow(t, db).Entries)
		return string(b)
	}
	if gj(p) != gj(r) || entryOf(glossaryNow(t, r), "zombie process") == nil {
		t.Fatal("the glossaries differ")
	}
}
