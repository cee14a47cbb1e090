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
