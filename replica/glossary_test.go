package replica_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

func glossaryJSON(tb testing.TB, db *storage.DB) string {
	tb.Helper()
	g, err := db.Taxonomies().Glossary(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := json.Marshal(g.Entries)
	return string(b)
}

// An admin's glossary entries added, changed and removed on the primary
// reach a running replica through the taxonomy feed: the replica's
// glossary (the one its search translates with) is the primary's, and
// its position follows the primary's sequence although the changes were
// of the glossary alone.
func TestFollowerTakesTheGlossary(t *testing.T) {
	p, _, rdb, f := levelReplica(t, 5)

	ctx := context.Background()
	ta := p.db.Taxonomies()
	for _, e := range []incidentlib.GlossaryEntry{
		{En: []string{"zombie process"}, Ko: []string{"좀비 프로세스"}},
		{En: []string{"noisy neighbor"}, Ko: []string{"시끄러운 이웃"}},
	} {
		if _, err := ta.AddGlossaryEntry(ctx, "boss", e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ta.UpdateGlossaryEntry(ctx, "boss", "zombie process", incidentlib.GlossaryEntry{En: []string{"defunct process", "zombie process"}, Ko: []string{"좀비 프로세스"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ta.RemoveGlossaryEntry(ctx, "boss", "noisy neighbor"); err != nil {
		t.Fatal(err)
	}
	f.waitSeq(t, p.db.Incidents().Seq())
	if a, b := glossaryJSON(t, p.db), glossaryJSON(t, rdb); a != b || a == "null" {
		t.Fatalf("the replica's glossary differs:\nprimary %s\nreplica %s", a, b)
	}
	g, _ := rdb.Taxonomies().Glossary(ctx)
	if len(g.Entries) != 1 || g.Entries[0].En[0] != "defunct process" {
		t.Fatalf("the replica's glossary: %+v", g)
	}
	if st := f.Status(); st.TaxonomyApplied != 4 || st.TaxonomySkipped != 0 {
		t.Fatalf("status %+v", st)
	}
}

// A hostile primary's glossary entries (Hangul on the English side, a
// subject that is not the key added, a change without the entry after
// it, a subject that is no glossary key) are refused and counted; the good
// ones around them are applied.
func TestFollowerRefusesHostileGlossaryEntries(t *testing.T) {
	goroutineGuard(t)
	fs := &feedServer{}
	entry := fs.taxEntry
	good := incidentlib.GlossaryEntry{En: []string{"zombie process"}, Ko: []string{"좀비 프로세스"}}
	entry(1, incidentlib.ActionGlossaryAdd, "glossary:zombie process", good)
	entry(2, incidentlib.ActionGlossaryAdd, "glossary:좀비", incidentlib.GlossaryEntry{En: []string{"좀비"}, Ko: []string{"좀비"}})
	entry(3, incidentlib.ActionGlossaryAdd, "glossary:innocent", incidentlib.GlossaryEntry{En: []string{"other"}, Ko: []string{"다른"}})
	entry(4, incidentlib.ActionGlossaryChange, "glossary:zombie process", nil)
	entry(5, incidentlib.ActionGlossaryRemove, "glossary:"+string(make([]byte, 100)), nil)
	entry(6, incidentlib.ActionGlossaryAdd, "glossary:noisy neighbor", incidentlib.GlossaryEntry{En: []string{"noisy neighbor"}, Ko: []string{"시끄러운 이웃"}})
	fs.add(t, hostileRecord("IL-0001", nil))
	db, f := followFeed(t, fs, 1)
	g, err := db.Taxonomies().Glossary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range g.Entries {
		keys = append(keys, e.En[0])
	}
	if len(keys) != 2 || keys[0] != "noisy neighbor" || keys[1] != "zombie process" {
		t.Fatalf("the replica's glossary: %v", keys)
	}
	if st := f.Status(); st.TaxonomyEntry != 6 || st.TaxonomyApplied != 2 || st.TaxonomySkipped != 4 {
		t.Fatalf("status %+v", st)
	}
}
