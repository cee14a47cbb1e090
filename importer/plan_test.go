package importer

import (
	"encoding/json"
	"testing"

	"github.com/incidentlib/incidentlib"
)

func rec(key, url, title string) Record {
	inc := &incidentlib.Incident{Org: "Example", OrgSlug: "example", Title: incidentlib.Text{En: title},
		Sources: []incidentlib.Source{{URL: url}}, Severity: "unknown"}
	setExtra(inc, "licence", "MIT")
	return Record{Incident: inc, SourceKey: key, Where: key}
}

// apply writes a plan into a map standing for the store.
func apply(store map[string]*incidentlib.Incident, p *Plan) {
	for from := range p.Merges {
		delete(store, from)
	}
	for _, inc := range p.Upserts {
		store[inc.ID] = inc
	}
}

func all(store map[string]*incidentlib.Incident) []*incidentlib.Incident {
	var out []*incidentlib.Incident
	for _, inc := range store {
		out = append(out, inc)
	}
	return out
}

func snapshot(store map[string]*incidentlib.Incident) string {
	b, _ := json.Marshal(store)
	return string(b)
}

func TestPlanStableIDsAndIdempotence(t *testing.T) {
	store := map[string]*incidentlib.Incident{}
	batch := []Record{rec("a/1", "https://x.example/1", "one"), rec("a/2", "https://x.example/2", "two")}
	p, err := PlanImport(batch, NewIndex(all(store)))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c[ActionCreate] != 2 {
		t.Fatalf("%v", c)
	}
	apply(store, p)
	first := snapshot(store)
	// The same collection again, with one title changed: same ids, updated.
	batch[1].Incident.Title.En = "two, revised"
	p, err = PlanImport(batch, NewIndex(all(store)))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c[ActionUpdate] != 2 || len(store) != 2 {
		t.Fatalf("%v", c)
	}
	apply(store, p)
	if store["IL-0002"].Title.En != "two, revised" {
		t.Fatalf("%+v", store)
	}
	batch[1].Incident.Title.En = "two"
	p, _ = PlanImport(batch, NewIndex(all(store)))
	apply(store, p)
	if snapshot(store) != first {
		t.Fatal("re-import is not idempotent")
	}
}

func TestPlanCrossCollectionMerge(t *testing.T) {
	store := map[string]*incidentlib.Incident{}
	a := rec("icco/u1", "https://www.Example.com/post/", "from icco")
	a.Incident.Date = "2020-01-02"
	p, _ := PlanImport([]Record{a}, NewIndex(nil))
	apply(store, p)
	b := rec("macintux/https://example.com/post", "http://example.com/post", "from macintux")
	b.Incident.Summary.En = "a summary icco lacks"
	p, _ = PlanImport([]Record{b}, NewIndex(all(store)))
	if c := p.Counts(); c[ActionMerge] != 1 {
		t.Fatalf("%v", c)
	}
	apply(store, p)
	if len(store) != 1 {
		t.Fatalf("the same postmortem became %d incidents", len(store))
	}
	got := store["IL-0001"]
	if got.Title.En != "from icco" || got.Summary.En != "a summary icco lacks" || len(got.Sources) != 1 {
		t.Fatalf("merge: %+v", got)
	}
	if keys := sourceKeys(got); len(keys) != 2 {
		t.Fatalf("source keys %v", keys)
	}
	before := snapshot(store)
	for _, batch := range [][]Record{{b}, {a}, {a, b}, {b, a}} {
		p, _ = PlanImport(batch, NewIndex(all(store)))
		apply(store, p)
		if snapshot(store) != before {
			t.Fatalf("re-importing %d records changed the merged incident", len(batch))
		}
	}
}

func TestPlanMergesTwoExistingIncidents(t *testing.T) {
	store := map[string]*incidentlib.Incident{}
	p, _ := PlanImport([]Record{rec("a/1", "https://x.example/1", "one"), rec("b/9", "https://x.example/9", "nine")}, NewIndex(nil))
	apply(store, p)
	// a/1 now cites b/9's URL too: they are the same postmortem.
	again := rec("a/1", "https://x.example/1", "one")
	again.Incident.Sources = append(again.Incident.Sources, incidentlib.Source{URL: "https://x.example/9"})
	p, _ = PlanImport([]Record{again}, NewIndex(all(store)))
	if p.Merges["IL-0002"] != "IL-0001" {
		t.Fatalf("merges %v", p.Merges)
	}
	apply(store, p)
	if len(store) != 1 || len(store["IL-0001"].Sources) != 2 || len(sourceKeys(store["IL-0001"])) != 2 {
		t.Fatalf("%s", snapshot(store))
	}
	if ids := stringList(store["IL-0001"].Extra[ExtraMergedIDs]); len(ids) != 1 || ids[0] != "IL-0002" {
		t.Fatalf("merged ids %v", ids)
	}
	// b/9 imported again lands on the merged incident.
	p, _ = PlanImport([]Record{rec("b/9", "https://x.example/9", "nine")}, NewIndex(all(store)))
	if p.Outcomes[0].ID != "IL-0001" {
		t.Fatalf("%+v", p.Outcomes)
	}
}

func TestPlanCuratedRecordWins(t *testing.T) {
	curated := &incidentlib.Incident{ID: "IL-0213", Org: "Roblox", OrgSlug: "roblox", Title: incidentlib.Text{En: "curated", Ko: "큐레이션"},
		Sources: []incidentlib.Source{{URL: "https://about.roblox.com/newsroom/x"}}}
	store := map[string]*incidentlib.Incident{"IL-0213": curated}
	r := rec("icco/r", "https://about.roblox.com/newsroom/x/", "imported")
	r.Incident.Lessons.En = "lessons"
	p, _ := PlanImport([]Record{r}, NewIndex(all(store)))
	apply(store, p)
	got := store["IL-0213"]
	if len(store) != 1 || got.Title.En != "curated" || got.Lessons.En != "lessons" {
		t.Fatalf("%s", snapshot(store))
	}
	before := snapshot(store)
	p, _ = PlanImport([]Record{r}, NewIndex(all(store)))
	apply(store, p)
	if snapshot(store) != before {
		t.Fatal("not idempotent")
	}
}
