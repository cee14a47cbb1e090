package storage_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

func changesStore(tb testing.TB, n int) (*storage.DB, []*incidentlib.Incident) {
	tb.Helper()
	db, err := storage.Open(filepath.Join(tb.TempDir(), "changes.db"), storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	incs, err := gen.Generate(gen.Options{Count: n, Seed: 3, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		tb.Fatal(err)
	}
	return db, incs
}

func TestChangesSince(t *testing.T) {
	ctx := context.Background()
	db, incs := changesStore(t, 50)
	// Change one incident, delete another: each keeps one entry, its latest.
	changed := *incs[3]
	changed.Title.En = "A changed title"
	if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{&changed}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	// Deleting also changes the incidents that linked to it.
	victim := incs[len(incs)-1].ID
	if _, err := db.Incidents().DeleteIncident(ctx, victim, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var all []incidentlib.Change
	var from uint64
	for {
		page, err := db.Incidents().ChangesSince(ctx, from, 7)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 7 {
			break
		}
		from = page[len(page)-1].Seq
	}
	seen := map[string]bool{}
	for i, c := range all {
		if i > 0 && c.Seq <= all[i-1].Seq {
			t.Errorf("change %d at %d after %d", i, c.Seq, all[i-1].Seq)
		}
		if seen[c.ID] {
			t.Errorf("%s has two entries", c.ID)
		}
		seen[c.ID] = true
		switch {
		case c.ID == victim:
			if !c.Deleted || c.Incident != nil {
				t.Errorf("the deleted incident: %+v", c)
			}
		case c.Deleted || c.Incident == nil || c.Incident.ID != c.ID:
			t.Errorf("change %+v", c)
		case c.ID == changed.ID && c.Incident.Title.En != changed.Title.En:
			t.Errorf("%s: title %q, want the changed one", c.ID, c.Incident.Title.En)
		}
	}
	if len(all) != len(incs) || all[len(all)-1].Seq != db.Incidents().Seq() {
		t.Errorf("%d changes up to %d, want %d up to %d", len(all), all[len(all)-1].Seq, len(incs), db.Incidents().Seq())
	}
	if rest, err := db.Incidents().ChangesSince(ctx, db.Incidents().Seq(), 10); err != nil || len(rest) != 0 {
		t.Errorf("changes after the last: %v, %v", rest, err)
	}
	if _, err := db.Incidents().ChangesSince(ctx, 0, 0); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Errorf("limit 0: %v, want %s", err, incidentlib.EINVALID)
	}
}

func TestSetsMatchFilters(t *testing.T) {
	ctx := context.Background()
	db, incs := changesStore(t, 300)
	yes := true
	filters := map[string]incidentlib.IncidentFilter{
		"None":     {},
		"Org":      {Organizations: []string{incs[0].OrgSlug}},
		"Severity": {Severities: []string{"sev1", "sev2"}},
		"Reviewed": {Reviewed: &yes},
		"Dates":    {DateFrom: changesStr("2012-03-04"), DateTo: changesStr("2020-01-01")},
	}
	for name, f := range filters {
		t.Run(name, func(t *testing.T) {
			set, err := db.Incidents().MatchSet(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			n, err := db.Incidents().CountIncidents(ctx, f)
			if err != nil || int(set.GetCardinality()) != n {
				t.Errorf("set of %d, count %d (%v)", set.GetCardinality(), n, err)
			}
			want, err := db.Incidents().Facets(ctx, f, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.Incidents().FacetsOf(ctx, set, nil)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("FacetsOf differs from Facets (%v)", err)
			}
			wantY, err := db.Incidents().Years(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			gotY, err := db.Incidents().YearsOf(ctx, set)
			if err != nil || !reflect.DeepEqual(gotY, wantY) {
				t.Errorf("YearsOf %v, Years %v (%v)", gotY, wantY, err)
			}
		})
	}
	if _, err := db.Incidents().MatchSet(ctx, incidentlib.IncidentFilter{DateFrom: changesStr("someday")}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Errorf("bad filter: %v", err)
	}
}

func changesStr(s string) *string { return &s }

// Every reader of the change log hands out only what the store has
// published (Seq): a change committed but not yet published (its commit
// handler runs after bbolt let readers see it) waits for its publication,
// so that no client holds a position above the store's head (a
// subscription's since would be SEQUENCE_AHEAD).
func TestLogReadersStopAtThePublishedSequence(t *testing.T) {
	ctx := context.Background()
	db, incs := changesStore(t, 5)
	edited := *incs[2]
	edited.Title.En = "Edited after the import"
	edited.UpdatedAt, edited.Version, edited.ReviewState, edited.CreatedAt = "", 0, "", ""
	edited.Review = incidentlib.Review{}
	if _, err := db.Incidents().UpsertIncident(ctx, &edited, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	head := db.Incidents().Seq()
	readers := map[string]func(seq uint64) ([]incidentlib.Change, error){
		"ChangesSince":    func(seq uint64) ([]incidentlib.Change, error) { return db.Incidents().ChangesSince(ctx, seq, 100) },
		"RawChangesSince": func(seq uint64) ([]incidentlib.Change, error) { return db.Incidents().RawChangesSince(ctx, seq, 100) },
		"VersionsSince":   func(seq uint64) ([]incidentlib.Change, error) { return db.Versions().VersionsSince(ctx, seq, 100) },
	}
	// Every method of a room that reads changes of the log is one of them.
	changeList := reflect.TypeFor[[]incidentlib.Change]()
	for _, room := range rooms { // rooms_test.go
		for i := range room.NumMethod() {
			m := room.Method(i)
			if m.Type.NumOut() > 0 && m.Type.Out(0) == changeList && readers[m.Name] == nil {
				t.Errorf("%s.%s reads the change log but is not tested here", room.Name(), m.Name)
			}
		}
	}
	last := func(name string, read func(uint64) ([]incidentlib.Change, error)) uint64 {
		t.Helper()
		got, err := read(0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) == 0 {
			t.Fatalf("%s: no changes", name)
		}
		return got[len(got)-1].Seq
	}
	for name, read := range readers {
		if got := last(name, read); got != head {
			t.Fatalf("%s: last change %d, want the head %d", name, got, head)
		}
	}
	publish := storage.HoldPublished(db, head-1)
	for name, read := range readers {
		if got := last(name, read); got > head-1 {
			t.Errorf("%s handed out change %d while the published sequence is %d", name, got, head-1)
		}
		if got, err := read(head - 1); err != nil || len(got) != 0 {
			t.Errorf("%s after the published sequence: %d changes (%v), want none", name, len(got), err)
		}
	}
	publish()
	for name, read := range readers {
		if got := last(name, read); got != head {
			t.Errorf("%s once published: last change %d, want %d", name, got, head)
		}
	}
}
