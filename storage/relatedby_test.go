package storage_test

import (
	"context"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// relatedBy shows what lists show by default: a withdrawn incident that
// names another in its related leaves that one's relatedBy.
func TestRelatedByLeavesOutWithdrawn(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	mk := func(id string, related ...string) *incidentlib.Incident {
		return &incidentlib.Incident{ID: id, Org: "Example", OrgSlug: "example", Title: incidentlib.Text{En: id}, Related: related}
	}
	mustImport(t, db, []*incidentlib.Incident{mk("IL-0001"), mk("IL-0002", "IL-0001"), mk("IL-0003", "IL-0001")})
	by := func() []string {
		t.Helper()
		out, err := db.Incidents().RelatedByIDs(ctx, []string{"IL-0001"})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	if got := by(); !slices.Equal(got, []string{"IL-0002", "IL-0003"}) {
		t.Fatalf("relatedBy %v, want IL-0002 IL-0003", got)
	}
	editor := incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: "kim", Role: incidentlib.RoleEditor})
	if _, err := db.Incidents().WithdrawIncident(editor, "IL-0002", "a duplicate", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := by(); !slices.Equal(got, []string{"IL-0003"}) {
		t.Fatalf("relatedBy %v after IL-0002 was withdrawn, want IL-0003 alone", got)
	}
}
