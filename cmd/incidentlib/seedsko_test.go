package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
)

// TestSeedsKorean: every seed incident reads in Korean: each text field
// it has in English has Korean too (title, summary, lessons, trigger,
// detection, symptoms text, remediation and action items), and a Korean
// the record does not say otherwise of is marked a machine translation.
func TestSeedsKorean(t *testing.T) {
	incs, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range incs {
		for name, tx := range map[string]incidentlib.Text{"title": inc.Title, "summary": inc.Summary, "lessons": inc.Lessons,
			"trigger": inc.Trigger, "detection": inc.Detection, "symptoms_text": inc.SymptomsText} {
			if tx.En != "" && tx.Ko == "" {
				t.Errorf("%s: %s has no Korean", inc.ID, name)
			}
		}
		for _, items := range [][]incidentlib.Item{inc.Remediation, inc.ActionItems} {
			for i, it := range items {
				if it.Text.En != "" && it.Text.Ko == "" {
					t.Errorf("%s: item %d has no Korean", inc.ID, i)
				}
			}
		}
		if inc.OrgSlug == "dfds" && inc.TextOrigin.In(incidentlib.LangKo) != incidentlib.TextMachineTranslation {
			t.Errorf("%s: Korean text origin %s", inc.ID, inc.TextOrigin.In(incidentlib.LangKo))
		}
	}
}

// TestSeedsUpdateBringsKorean: a store written with the DFDS seeds in
// English alone gets their Korean text and its origin from seeds update,
// and search finds it.
func TestSeedsUpdateBringsKorean(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	if _, errOut, err := runCmd(t, nil, "", "import", "--db", path, oldSeedsFixture); err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	incs, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*incidentlib.Incident{}
	for _, inc := range incs {
		want[inc.ID] = inc
	}
	db := openStore(t, path)
	before, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{"IL-0304"})
	db.Close()
	if err != nil || before[0] == nil || before[0].Title.Ko != "" {
		t.Fatalf("the old store's IL-0304 already reads in Korean: %v %+v", err, before[0])
	}
	if out, errOut, err := runCmd(t, nil, "", "seeds", "update", "--db", path); err != nil || !strings.Contains(out, "7 written") {
		t.Fatalf("%v %q %s", err, out, errOut)
	}
	db = openStore(t, path)
	defer db.Close()
	got, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{"IL-0304", "IL-0314"})
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range got {
		w := want[inc.ID]
		same := func(a, b incidentlib.Text) bool { return a.En == b.En && a.Ko == b.Ko }
		if inc.Title.Ko == "" || !same(inc.Title, w.Title) || !same(inc.Summary, w.Summary) || !same(inc.Lessons, w.Lessons) ||
			!slices.EqualFunc(inc.ActionItems, w.ActionItems, func(a, b incidentlib.Item) bool { return same(a.Text, b.Text) }) {
			t.Errorf("%s after seeds update: %+v %+v", inc.ID, inc.Title, inc.ActionItems)
		}
		if inc.TextOrigin.In(incidentlib.LangKo) != incidentlib.TextMachineTranslation {
			t.Errorf("%s: Korean text origin %s", inc.ID, inc.TextOrigin.In(incidentlib.LangKo))
		}
	}
}
