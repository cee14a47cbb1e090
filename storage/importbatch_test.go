package storage_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

func rec(id, org, slug string) *incidentlib.Incident {
	return &incidentlib.Incident{ID: id, Org: org, OrgSlug: slug, Title: incidentlib.Text{En: "t " + id}}
}

func checkAll(t *testing.T, db *storage.DB, incs ...*incidentlib.Incident) error {
	t.Helper()
	c := db.Incidents().NewImportCheck(0)
	var es incidentlib.Errors
	for _, inc := range incs {
		b, _ := json.Marshal(inc)
		es = append(es, incidentlib.ErrorList(c.Add(inc, len(b)))...)
	}
	es = append(es, incidentlib.ErrorList(c.Finish(context.Background()))...)
	if len(es) == 0 {
		return nil
	}
	return es
}

// TestImportCheck: the checks across the records of a batched import, and
// against the store.
func TestImportCheck(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	stored := rec("IL-0001", "Acme", "acme")
	stored.RecurrenceOf = ""
	if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{stored, rec("IL-0002", "Beta", "beta")}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		incs []*incidentlib.Incident
		want string // "" passes
	}{
		{"ForwardLinksPass", func() []*incidentlib.Incident {
			a, b := rec("IL-0010", "Acme", "acme"), rec("IL-0011", "Acme", "acme")
			a.Related, a.RecurrenceOf = []string{"IL-0011", "IL-0002"}, "IL-0011"
			return []*incidentlib.Incident{a, b}
		}(), ""},
		{"DanglingLink", func() []*incidentlib.Incident {
			a := rec("IL-0010", "Acme", "acme")
			a.Related = []string{"IL-0999"}
			return []*incidentlib.Incident{a}
		}(), "related[0] IL-0999 is not in the library"},
		{"IDTwice", []*incidentlib.Incident{rec("IL-0010", "Acme", "acme"), rec("IL-0010", "Acme", "acme")}, "appears twice"},
		{"CycleThroughTheStore", func() []*incidentlib.Incident {
			// IL-0001 (rewritten) -> IL-0012 -> IL-0001
			a, b := rec("IL-0001", "Acme", "acme"), rec("IL-0012", "Acme", "acme")
			a.RecurrenceOf, b.RecurrenceOf = "IL-0012", "IL-0001"
			return []*incidentlib.Incident{a, b}
		}(), "forms a cycle"},
		{"OrgNamedTwoWaysInTheImport", []*incidentlib.Incident{rec("IL-0010", "Gamma", "gamma"), rec("IL-0011", "Gamma Inc", "gamma")}, "is named"},
		{"OrgSlugOfAnotherNameInTheStore", []*incidentlib.Incident{rec("IL-0010", "Beta Corp", "beta")}, `belongs to organization "Beta"`},
		{"OrgRenamedWholly", []*incidentlib.Incident{rec("IL-0002", "Beta Corp", "beta")}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkAll(t, db, c.incs...)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			case err != nil && incidentlib.ErrorCode(err) != incidentlib.EINVALID:
				t.Fatalf("code %s", incidentlib.ErrorCode(err))
			}
		})
	}
}

// TestBatchedImportMarker: the marker is there between batches, named by
// Check, and gone after the last.
func TestBatchedImportMarker(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	a, b := rec("IL-0001", "Acme", "acme"), rec("IL-0002", "Acme", "acme")
	a.Related = []string{"IL-0002"}
	imp := db.Incidents().NewBatchedImport(2, storage.BatchedImportOptions{KeepUpdatedAt: true})
	if _, err := imp.Write(ctx, []*incidentlib.Incident{a}, false); err != nil {
		t.Fatal(err)
	}
	p, err := db.Incidents().InterruptedImport(ctx)
	if err != nil || p == nil || p.Done != 1 || p.Total != 2 {
		t.Fatalf("%+v %v", p, err)
	}
	problems, _ := db.Maintenance().Check(ctx)
	if !strings.Contains(strings.Join(problems, "\n"), "an import was interrupted after 1 of 2 records; re-run it: imports are idempotent") {
		t.Fatalf("check: %v", problems)
	}
	if !strings.Contains(strings.Join(problems, "\n"), "index o:acme: missing") {
		t.Fatalf("the first batch's postings were written before the last batch: %v", problems)
	}
	// Another import (the first stopped there) indexes what the first
	// left unindexed, whatever its own records.
	imp2 := db.Incidents().NewBatchedImport(1, storage.BatchedImportOptions{KeepUpdatedAt: true})
	if _, err := imp2.Write(ctx, []*incidentlib.Incident{b}, true); err != nil {
		t.Fatal(err)
	}
	if p, _ := db.Incidents().InterruptedImport(ctx); p != nil {
		t.Fatalf("marker left: %+v", p)
	}
	if problems, _ := db.Maintenance().Check(ctx); len(problems) != 0 {
		t.Fatalf("check: %v", problems)
	}
}
