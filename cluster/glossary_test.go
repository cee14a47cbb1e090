package cluster_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// A glossary entry added through one node, changed through another, is
// every node's, with the same history and version, and an invalid entry
// or an unknown key is refused on the receiving node or recorded as
// refused on every node.
func TestGlossaryThroughTheLog(t *testing.T) {
	c := startCluster(t, 3)
	n1, n2, n3 := c.members[0], c.members[1], c.members[2]
	ctx := admin("words")

	if _, err := n1.mb.Writer.AddGlossaryEntry(ctx, "words", incidentlib.GlossaryEntry{En: []string{"zombie process"}, Ko: []string{"좀비 프로세스"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.mb.Writer.UpdateGlossaryEntry(ctx, "words", "zombie process", incidentlib.GlossaryEntry{En: []string{"zombie process", "defunct process"}, Ko: []string{"좀비 프로세스"}, Note: "both"}); err != nil {
		t.Fatal(err)
	}
	// Refused on the receiving node: nothing enters the log.
	before, err := n3.mb.Node.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n3.mb.Writer.AddGlossaryEntry(ctx, "words", incidentlib.GlossaryEntry{En: []string{"좀비"}, Ko: []string{"좀비"}}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("Hangul on the English side answered %v, want INVALID", err)
	}
	if after, _ := n3.mb.Node.LastSeq(context.Background()); after != before {
		t.Fatalf("an invalid entry entered the log (%d -> %d)", before, after)
	}
	// Refused at apply, against the state every node holds.
	if _, err := n3.mb.Writer.RemoveGlossaryEntry(ctx, "words", "no such entry"); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
		t.Fatalf("removing an unknown entry answered %v, want NOT_FOUND", err)
	}
	c.refusedEverywhere(n3, incidentlib.ENOTFOUND)

	c.levelAll()
	var glossaries, histories []string
	for _, m := range c.members {
		g, err := m.db.Taxonomies().Glossary(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Entries) != 1 || len(g.Entries[0].En) != 2 || g.Entries[0].Note != "both" {
			t.Errorf("%s holds the glossary %+v", m.name, g)
		}
		b, _ := json.Marshal(g)
		glossaries = append(glossaries, string(b))
		page, err := m.db.Taxonomies().TaxonomyHistory(context.Background(), incidentlib.PageArgs{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(page.Changes)
		histories = append(histories, string(b))
		if page.TotalCount != 2 || page.Changes[0].Action != incidentlib.ActionGlossaryChange || page.Changes[1].Author != "words" {
			t.Errorf("%s's history: %s", m.name, b)
		}
	}
	if glossaries[0] != glossaries[1] || glossaries[0] != glossaries[2] || histories[0] != histories[1] || histories[0] != histories[2] {
		t.Errorf("the nodes differ:\n%v\n%v", glossaries, histories)
	}
	c.same()
}
