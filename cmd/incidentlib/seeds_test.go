package main

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// oldSeedsFixture holds the five hand-written seed records and two DFDS
// records as the seeds were before they carried provenance (the Veltrix
// accounts with veltrix as their organization), in canonical IL-JSON.
const oldSeedsFixture = "testdata/seeds-before-provenance.jsonl"

// provenanceTable is the table of the seeds' provenance.
var provenanceTable = map[string]struct {
	verification incidentlib.Verification
	en, ko       incidentlib.TextOrigin
	orgs         []incidentlib.OrganizationOf
}{
	"IL-0213": {incidentlib.VerificationPrimarySource, incidentlib.TextOriginal, incidentlib.TextMachineTranslation,
		[]incidentlib.OrganizationOf{{Slug: "roblox", Name: "Roblox", Role: incidentlib.RoleAffected}}},
	"IL-0216": {incidentlib.VerificationSecondaryReport, incidentlib.TextMachineTranslation, incidentlib.TextOriginal,
		[]incidentlib.OrganizationOf{{Slug: "kakao-entertainment", Name: "Kakao Entertainment", Role: incidentlib.RoleAffected}}},
	"IL-0304": {incidentlib.VerificationPrimarySource, incidentlib.TextOriginal, incidentlib.TextMachineTranslation,
		[]incidentlib.OrganizationOf{{Slug: "dfds", Name: "DFDS", Role: incidentlib.RoleAffected}}},
	"IL-0314": {incidentlib.VerificationPrimarySource, incidentlib.TextOriginal, incidentlib.TextMachineTranslation,
		[]incidentlib.OrganizationOf{{Slug: "dfds", Name: "DFDS", Role: incidentlib.RoleAffected}}},
}

func init() {
	for _, id := range []string{"IL-0214", "IL-0215", "IL-0217"} {
		provenanceTable[id] = struct {
			verification incidentlib.Verification
			en, ko       incidentlib.TextOrigin
			orgs         []incidentlib.OrganizationOf
		}{incidentlib.VerificationFirstPersonAccount, incidentlib.TextMachineTranslation, incidentlib.TextOriginal,
			[]incidentlib.OrganizationOf{
				{Slug: "unnamed-veltrix-customer", Name: "Unnamed Veltrix customer", Role: incidentlib.RoleAffected},
				{Slug: "veltrix", Name: "Veltrix", Role: incidentlib.RoleVendor}}}
	}
}

func checkSeedProvenance(t *testing.T, incs []*incidentlib.Incident) {
	t.Helper()
	for _, inc := range incs {
		want, ok := provenanceTable[inc.ID]
		if !ok {
			continue
		}
		if inc.Verification != want.verification || inc.TextOrigin.In(incidentlib.LangEn) != want.en ||
			inc.TextOrigin.In(incidentlib.LangKo) != want.ko || !reflect.DeepEqual(inc.Organizations(), want.orgs) {
			t.Errorf("%s: %s en %s ko %s %+v, want %+v", inc.ID, inc.Verification, inc.TextOrigin.In(incidentlib.LangEn),
				inc.TextOrigin.In(incidentlib.LangKo), inc.Organizations(), want)
		}
	}
}

// TestSeedsProvenance: the shipped seeds say what the table says;
// every DFDS record is a primary source in English.
func TestSeedsProvenance(t *testing.T) {
	incs, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	checkSeedProvenance(t, incs)
	for _, inc := range incs {
		if inc.OrgSlug == "dfds" && (inc.Verification != incidentlib.VerificationPrimarySource ||
			inc.TextOrigin.In(incidentlib.LangEn) != incidentlib.TextOriginal || len(inc.OrganizationRoles) != 0) {
			t.Errorf("%s: %+v %+v", inc.ID, inc.Verification, inc.TextOrigin)
		}
	}
}

// TestSeedsUpdate: a store written with the seeds as they were is brought
// to the corrected seeds, check is clean, and a second run writes nothing.
func TestSeedsUpdate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.db")
	if out, errOut, err := runCmd(t, nil, "", "import", "--db", path, oldSeedsFixture); err != nil || !strings.Contains(out, "7 created") {
		t.Fatalf("%v %s %s", err, out, errOut)
	}
	// A record that is not a seed stays as it is.
	other := `{"id":"IL-9001","org":"Veltrix","org_slug":"veltrix","title":{"en":"Not a seed"}}`
	if _, errOut, err := runCmd(t, nil, other, "import", "--db", path, "-"); err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	before := exportOf(t, path)

	out, errOut, err := runCmd(t, nil, "", "seeds", "update", "--db", path)
	if err != nil || !strings.Contains(out, "7 written, 0 unchanged, 37 not in the store") {
		t.Fatalf("%v %q %s", err, out, errOut)
	}
	if out, _, err := runCmd(t, nil, "", "check", "--db", path); err != nil || !strings.Contains(out, "check: ok") {
		t.Fatalf("check after seeds update: %v %s", err, out)
	}
	after := exportOf(t, path)
	if before["IL-9001"] != after["IL-9001"] {
		t.Error("seeds update changed a record that is not a seed")
	}
	db := openStore(t, path)
	ids := []string{"IL-0213", "IL-0214", "IL-0215", "IL-0216", "IL-0217", "IL-0304", "IL-0314", "IL-9001"}
	incs, err := db.Incidents().FindIncidentsByIDs(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	checkSeedProvenance(t, incs)
	for _, inc := range incs[:7] {
		if inc.UpdatedAt == "" || strings.Contains(before[inc.ID], `"updated_at":"`+inc.UpdatedAt+`"`) {
			t.Errorf("%s was not stamped: %s", inc.ID, inc.UpdatedAt)
		}
	}
	// veltrix is still an organization (the vendor of three and the
	// affected one of IL-9001) but counts only IL-9001.
	counts, err := db.Incidents().CountIncidentsBy(context.Background(), []incidentlib.CountKey{
		{Kind: incidentlib.CountKindOrganization, Slug: "veltrix"},
		{Kind: incidentlib.CountKindOrganization, Slug: "unnamed-veltrix-customer"},
	})
	if err != nil || counts[0] != 1 || counts[1] != 3 {
		t.Fatalf("counts %v %v", counts, err)
	}
	db.Close()

	out, _, err = runCmd(t, nil, "", "seeds", "update", "--db", path)
	if err != nil || !strings.Contains(out, "0 written, 7 unchanged") {
		t.Fatalf("second run: %v %q", err, out)
	}
	if again := exportOf(t, path); !reflect.DeepEqual(again, after) {
		t.Fatal("the second run changed the store")
	}
}

// TestSeedsUpdateThroughServer: the same through a running server's
// upsertIncident.
func TestSeedsUpdateThroughServer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	if _, errOut, err := runCmd(t, nil, "", "import", "--db", path, oldSeedsFixture); err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	base := serveInProcess(t, path)
	env := map[string]string{"INCIDENTLIB_TOKEN": crashToken}
	out, errOut, err := runCmd(t, env, "", "seeds", "update", "--server", base)
	if err != nil || !strings.Contains(out, "7 written, 0 unchanged") {
		t.Fatalf("%v %q %s", err, out, errOut)
	}
	out, _, err = runCmd(t, env, "", "seeds", "update", "--server", base)
	if err != nil || !strings.Contains(out, "0 written, 7 unchanged") {
		t.Fatalf("second run: %v %q", err, out)
	}
}

func openStore(t *testing.T, path string) *storage.DB {
	t.Helper()
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// exportOf returns the store's records by id, as exported.
func exportOf(t *testing.T, path string) map[string]string {
	t.Helper()
	out, _, err := runCmd(t, nil, "", "export", "--db", path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		id := line[strings.Index(line, `"id":"`)+6:]
		m[id[:strings.IndexByte(id, '"')]] = line
	}
	return m
}
