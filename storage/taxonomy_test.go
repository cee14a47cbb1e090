package storage_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// taxonomyWithout returns the seeds' taxonomy without the term kind:slug,
// and with label en of high-latency replaced when relabel is set: the
// built-in taxonomy of another release.
func taxonomyWithout(tb testing.TB, kind incidentlib.TermKind, slug, relabel string) *incidentlib.Taxonomy {
	tb.Helper()
	var terms []*incidentlib.Term
	for _, t := range seeds.MustTaxonomy().Terms {
		if t.Kind == kind && t.Slug == slug {
			continue
		}
		c := *t
		if relabel != "" && t.Kind == incidentlib.KindSymptom && t.Slug == "high-latency" {
			c.Label.En = relabel
		}
		terms = append(terms, &c)
	}
	tax, err := incidentlib.NewTaxonomy(terms)
	if err != nil {
		tb.Fatal(err)
	}
	return tax
}

// TestTaxonomyAfterCreation: the built-in taxonomy seeds a new store;
// afterwards an open never rewrites it (an admin's label and added term
// survive, a newer release's different label does not overwrite them) and
// only adds the built-in terms the store lacks, with an entry in the
// history; a read-only open reads the same taxonomy.
func TestTaxonomyAfterCreation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tax.db")
	older := taxonomyWithout(t, incidentlib.KindSymptom, "partial-outage", "")
	db, err := storage.Open(path, storage.Options{Taxonomy: older})
	if err != nil {
		t.Fatal(err)
	}
	if db.Taxonomies().Taxonomy().Term(incidentlib.KindSymptom, "partial-outage") != nil {
		t.Fatal("a term the built-in taxonomy lacks")
	}
	if _, err := db.Taxonomies().UpdateTerm(ctx, "boss", incidentlib.KindSymptom, "high-latency", incidentlib.TermUpdate{Label: &incidentlib.Text{En: "Slow"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Taxonomies().AddTerm(ctx, "boss", incidentlib.Term{Kind: incidentlib.KindDomain, Slug: "quantum", Label: incidentlib.Text{En: "Quantum", Ko: "양자"}}); err != nil {
		t.Fatal(err)
	}
	inc := &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "x"}, Domain: []string{"quantum"}}
	if _, err := db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The newer release: it has partial-outage and another label for
	// high-latency.
	newer := taxonomyWithout(t, "", "", "High latency (new)")
	db, err = storage.Open(path, storage.Options{Taxonomy: newer})
	if err != nil {
		t.Fatal(err)
	}
	tax := db.Taxonomies().Taxonomy()
	if tax.Term(incidentlib.KindSymptom, "partial-outage") == nil {
		t.Fatal("the store did not gain the built-in term it lacked")
	}
	if got := tax.Term(incidentlib.KindSymptom, "high-latency").Label.En; got != "Slow" {
		t.Fatalf("the admin's label was overwritten: %q", got)
	}
	if tax.Term(incidentlib.KindDomain, "quantum") == nil {
		t.Fatal("the admin's term is gone")
	}
	h, err := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []incidentlib.TaxonomyAction
	for _, c := range h.Changes {
		actions = append(actions, c.Action)
	}
	if !slices.Equal(actions, []incidentlib.TaxonomyAction{incidentlib.ActionReleaseTerm, incidentlib.ActionAddTerm, incidentlib.ActionUpdateTerm}) ||
		h.Changes[0].Author != incidentlib.ReleaseAuthor || h.Changes[0].Subject != "term:symptom:partial-outage" {
		t.Fatalf("history: %+v", h.Changes)
	}
	if problems, err := db.Maintenance().Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Opened again, nothing more is added; read-only, the same taxonomy.
	for _, ro := range []bool{false, true} {
		db, err = storage.Open(path, storage.Options{Taxonomy: newer, ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		h, err := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{})
		if err != nil || h.TotalCount != 3 {
			t.Fatalf("read-only %v: history %+v %v", ro, h, err)
		}
		if got := db.Taxonomies().Taxonomy().Term(incidentlib.KindSymptom, "high-latency").Label.En; got != "Slow" {
			t.Fatalf("read-only %v: label %q", ro, got)
		}
		db.Close()
	}
}

// TestTaxonomyHistoryPages: the history pages newest first with cursors,
// and a malformed cursor is BAD_CURSOR.
func TestTaxonomyHistoryPages(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	for _, a := range []string{"a1", "a2", "a3", "a4", "a5"} {
		if _, err := db.Taxonomies().AddTermAliases(ctx, "boss", incidentlib.KindSymptom, "high-latency", []string{a}); err != nil {
			t.Fatal(err)
		}
	}
	two := 2
	var got []uint64
	var after *string
	for {
		p, err := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{First: &two, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Changes {
			got = append(got, c.Number)
		}
		if !p.HasNextPage {
			break
		}
		after = &p.Cursors[len(p.Cursors)-1]
	}
	if !slices.Equal(got, []uint64{5, 4, 3, 2, 1}) {
		t.Fatalf("pages: %v", got)
	}
	bad := "nope"
	if _, err := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{After: &bad}); incidentlib.ErrorCode(err) != incidentlib.EBADCURSOR {
		t.Fatalf("bad cursor: %v", err)
	}
}

// TestDeprecatedTermAppliedAndImported: replication and imports accept a
// deprecated term; an upsert adding it is refused and writes nothing.
func TestDeprecatedTermAppliedAndImported(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	if _, err := db.Taxonomies().DeprecateTerm(ctx, "boss", incidentlib.KindSymptom, "high-latency", true); err != nil {
		t.Fatal(err)
	}
	inc := &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "x"}, Symptoms: []string{"high-latency"},
		UpdatedAt: "2026-01-01T00:00:00Z"}
	seq := db.Incidents().Seq()
	if _, err := db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("upsert: %v", err)
	}
	if db.Incidents().Seq() != seq {
		t.Fatal("a refused upsert wrote")
	}
	if _, err := db.Incidents().ApplyChanges(ctx, 0, []incidentlib.Change{{Seq: 7, ID: inc.ID, Incident: inc}}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	inc2 := *inc
	inc2.ID = "IL-0002"
	if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{&inc2}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatalf("import: %v", err)
	}
}

// TestTaxonomyReplay: another store that applies a store's history entries
// and its change log holds the same taxonomy, organizations and aliases;
// a page that does not follow on is CONFLICT and writes nothing.
func TestTaxonomyReplay(t *testing.T) {
	ctx := context.Background()
	p, r := MustOpenDB(t), MustOpenDB(t)
	put := func(id, org, slug string, symptoms ...string) {
		inc := &incidentlib.Incident{ID: id, Org: org, OrgSlug: slug, Title: incidentlib.Text{En: id}, Symptoms: symptoms}
		if _, err := p.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := p.Taxonomies().AddTerm(ctx, "boss", incidentlib.Term{Kind: incidentlib.KindSymptom, Slug: "clock-skew", Label: incidentlib.Text{En: "Clock skew"}})
	must(err)
	_, err = p.Taxonomies().AddTermAliases(ctx, "boss", incidentlib.KindSymptom, "clock-skew", []string{"time drift"})
	must(err)
	_, err = p.Taxonomies().UpdateTerm(ctx, "boss", incidentlib.KindSymptom, "high-latency", incidentlib.TermUpdate{Label: &incidentlib.Text{Ko: "느림"}})
	must(err)
	_, err = p.Taxonomies().DeprecateTerm(ctx, "boss", incidentlib.KindSymptom, "packet-loss", true)
	must(err)
	put("IL-0001", "Acme", "acme", "clock-skew")
	put("IL-0002", "Acme Inc.", "acme-inc")
	_, err = p.Taxonomies().AddOrganization(ctx, "boss", incidentlib.Organization{Slug: "globex", Name: "Globex"})
	must(err)
	_, _, err = p.Taxonomies().RenameOrganization(ctx, "boss", "acme", "ACME")
	must(err)
	_, err = p.Taxonomies().MergeOrganizations(ctx, "boss", "acme-inc", "acme")
	must(err)

	entries, err := p.Taxonomies().TaxonomyChangesAfter(ctx, 0, 100)
	must(err)
	if len(entries) != 7 {
		t.Fatalf("%d entries", len(entries))
	}
	if _, err := r.Taxonomies().ApplyTaxonomyChanges(ctx, 3, entries[3:]); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
		t.Fatalf("a page that does not follow on: %v", err)
	}
	pos, err := r.Taxonomies().ApplyTaxonomyChanges(ctx, 0, entries[:3])
	must(err)
	pos, err = r.Taxonomies().ApplyTaxonomyChanges(ctx, pos, entries[3:])
	must(err)
	if got, _ := r.Taxonomies().AppliedTaxonomy(ctx); got != 7 || pos != 7 {
		t.Fatalf("position %d %d", got, pos)
	}
	changes, err := p.Incidents().ChangesSince(ctx, 0, 100)
	must(err)
	_, err = r.Incidents().ApplyChanges(ctx, 0, changes)
	must(err)

	tj := func(db *storage.DB) string {
		b, _ := json.Marshal(db.Taxonomies().Taxonomy().Terms)
		return string(b)
	}
	if tj(p) != tj(r) {
		t.Fatal("the taxonomies differ")
	}
	for _, db := range []*storage.DB{p, r} {
		orgs, err := db.Taxonomies().FindOrganizationsBySlugs(ctx, []string{"acme-inc", "globex", "acme"})
		must(err)
		if orgs[0] == nil || orgs[0].Slug != "acme" || orgs[0].Name != "ACME" || orgs[1] == nil || orgs[2] == nil {
			t.Fatalf("organizations: %+v %+v %+v", orgs[0], orgs[1], orgs[2])
		}
		n, err := db.Incidents().CountIncidents(ctx, incidentlib.IncidentFilter{Organizations: []string{"acme-inc"}, Symptoms: []string{"time drift"}})
		must(err)
		if n != 1 {
			t.Fatalf("filter by aliases: %d", n)
		}
		problems, err := db.Maintenance().Check(ctx)
		if err != nil || len(problems) > 0 {
			t.Fatalf("check: %v %v", problems, err)
		}
	}
	h, err := r.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{})
	must(err)
	if h.TotalCount != 7 || h.Changes[0].Author != "boss" || h.Changes[0].Action != incidentlib.ActionMergeOrganizations {
		t.Fatalf("the replayed history: %+v", h.Changes[0])
	}
}

// TestMergedSlugOnWrites: an upsert that names an organization merged away
// is re-pointed at the survivor (slug and name, in roles too); an
// organization an admin added stays when its last incident goes.
func TestMergedSlugOnWrites(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	up := func(inc *incidentlib.Incident) *incidentlib.Incident {
		t.Helper()
		out, err := db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	up(&incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "a"}})
	up(&incidentlib.Incident{ID: "IL-0002", Org: "Acme Inc.", OrgSlug: "acme-inc", Title: incidentlib.Text{En: "b"}})
	if _, err := db.Taxonomies().MergeOrganizations(ctx, "boss", "acme-inc", "acme"); err != nil {
		t.Fatal(err)
	}
	got := up(&incidentlib.Incident{ID: "IL-0003", Org: "Acme Inc.", OrgSlug: "acme-inc", Title: incidentlib.Text{En: "c"},
		OrganizationRoles: []incidentlib.OrgRole{{Org: "Acme Inc.", OrgSlug: "acme-inc", Role: incidentlib.RoleVendor}}})
	if got.OrgSlug != "acme" || got.Org != "Acme" || len(got.OrganizationRoles) != 1 || got.OrganizationRoles[0].OrgSlug != "acme" || got.OrganizationRoles[0].Org != "Acme" {
		t.Fatalf("re-pointed: %+v", got)
	}
	if _, err := db.Taxonomies().AddOrganization(ctx, "boss", incidentlib.Organization{Slug: "globex", Name: "Globex"}); err != nil {
		t.Fatal(err)
	}
	up(&incidentlib.Incident{ID: "IL-0004", Org: "Globex", OrgSlug: "globex", Title: incidentlib.Text{En: "d"}})
	if _, err := db.Incidents().DeleteIncident(ctx, "IL-0004", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	orgs, err := db.Taxonomies().FindOrganizationsBySlugs(ctx, []string{"globex", "acme-inc"})
	if err != nil || orgs[0] == nil || orgs[1] == nil || orgs[1].Slug != "acme" {
		t.Fatalf("%+v %v", orgs, err)
	}
	if n, _ := db.Incidents().CountIncidents(ctx, incidentlib.IncidentFilter{Organizations: []string{"acme-inc"}}); n != 3 {
		t.Fatalf("filter by the merged slug: %d", n)
	}
	if problems, err := db.Maintenance().Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}
