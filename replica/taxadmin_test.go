package replica_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestFollowerGetsOrganizationMergesAndRenames: a merge and a rename of
// organizations on the primary rewrite its incidents through the change
// log, so a replica holds the same records afterwards.
func TestFollowerGetsOrganizationMergesAndRenames(t *testing.T) {
	ctx := context.Background()
	p := newPrimary(t, 200)
	ts := httptest.NewServer(p.srv)
	t.Cleanup(ts.Close)
	db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { db.Close() })
	f := startFollower(t, db, ts.URL, nil)
	f.waitSeq(t, p.db.Incidents().Seq())

	first := 3
	orgs, err := p.db.Taxonomies().FindOrganizations(ctx, incidentlib.PageArgs{First: &first})
	if err != nil || len(orgs.Organizations) < 3 {
		t.Fatalf("%v %v", orgs, err)
	}
	a, b, c := orgs.Organizations[0].Slug, orgs.Organizations[1].Slug, orgs.Organizations[2].Slug
	// A deprecated term of the incidents about to be rewritten; the change
	// of the taxonomy alone moves the primary's sequence without a change
	// in the feed, so it comes first.
	if _, err := p.db.Taxonomies().DeprecateTerm(ctx, "boss", incidentlib.KindSeverity, "sev1", true); err != nil {
		t.Fatal(err)
	}
	res, err := p.db.Taxonomies().MergeOrganizations(ctx, "boss", a, b)
	if err != nil || len(res.Incidents) == 0 {
		t.Fatalf("merge: %+v %v", res, err)
	}
	if _, _, err := p.db.Taxonomies().RenameOrganization(ctx, "boss", c, "Renamed Organization"); err != nil {
		t.Fatal(err)
	}
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, db)
	got, err := db.Taxonomies().FindOrganizationsBySlugs(ctx, []string{b, c})
	if err != nil || got[0] == nil || got[1] == nil || got[1].Name != "Renamed Organization" {
		t.Fatalf("the replica's organizations: %+v %v", got, err)
	}
}
