package server_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/storage"
)

// Structured provenance (issue #22), through the real handler and a real
// bbolt file.

const provenanceQuery = `query($id: ID!) { incident(id: $id) {
	verification textOrigin en: textOrigin(lang: EN) ko: textOrigin(lang: KO)
	organization { slug name incidentCount }
	organizations { role organization { id slug name incidentCount } }
} }`

type provenanceAnswer struct {
	Incident struct {
		Verification, TextOrigin, En, Ko string
		Organization                     struct {
			Slug, Name    string
			IncidentCount int
		}
		Organizations []struct {
			Role         string
			Organization struct {
				ID, Slug, Name string
				IncidentCount  int
			}
		}
	}
}

func TestProvenanceOfSeeds(t *testing.T) {
	// Every seed reads in Korean: IL-0399, an incident in English alone
	// beside them, shows the fallback.
	english := &incidentlib.Incident{ID: "IL-0399", Org: "Example", OrgSlug: "example", Title: incidentlib.Text{En: "English only"},
		Summary: incidentlib.Text{En: "Written in English alone."}, UpdatedAt: "2026-01-01T00:00:00Z"}
	ts := newTestServer(t, append(seedIncidents(t), english))
	get := func(id string, headers ...string) provenanceAnswer {
		var got provenanceAnswer
		ts.data(t, provenanceQuery, map[string]any{"id": id}, &got, headers...)
		return got
	}
	t.Run("Roblox", func(t *testing.T) {
		g := get("IL-0213").Incident
		if g.Verification != "PRIMARY_SOURCE" || g.TextOrigin != "ORIGINAL" || g.En != "ORIGINAL" || g.Ko != "MACHINE_TRANSLATION" {
			t.Fatalf("%+v", g)
		}
		if len(g.Organizations) != 1 || g.Organizations[0].Role != "AFFECTED" || g.Organizations[0].Organization.Slug != "roblox" {
			t.Fatalf("%+v", g.Organizations)
		}
		if k := get("IL-0213", "Accept-Language", "ko").Incident; k.TextOrigin != "MACHINE_TRANSLATION" {
			t.Fatalf("textOrigin without lang follows Accept-Language: %+v", k)
		}
	})
	t.Run("VeltrixAccount", func(t *testing.T) {
		g := get("IL-0214").Incident
		if g.Verification != "FIRST_PERSON_ACCOUNT" || g.En != "MACHINE_TRANSLATION" || g.Ko != "ORIGINAL" {
			t.Fatalf("%+v", g)
		}
		if g.Organization.Slug != "unnamed-veltrix-customer" || g.Organization.IncidentCount != 3 {
			t.Fatalf("organization: %+v", g.Organization)
		}
		o := g.Organizations
		if len(o) != 2 || o[0].Role != "AFFECTED" || o[0].Organization.Slug != "unnamed-veltrix-customer" ||
			o[1].Role != "VENDOR" || o[1].Organization.ID != "org:veltrix" || o[1].Organization.Name != "Veltrix" {
			t.Fatalf("organizations: %+v", o)
		}
		// The vendor counts no incident of its own.
		if o[1].Organization.IncidentCount != 0 {
			t.Fatalf("veltrix incidentCount %d, want 0 (it is only a vendor)", o[1].Organization.IncidentCount)
		}
	})
	t.Run("TextOriginFallsBackWithTheText", func(t *testing.T) {
		// IL-0399 is in English only: in Korean it serves its English
		// text, an original.
		if g := get("IL-0399").Incident; g.Ko != "ORIGINAL" || g.En != "ORIGINAL" {
			t.Fatalf("%+v", g)
		}
		// The DFDS records' Korean is a machine translation of their
		// English.
		if g := get("IL-0301").Incident; g.Ko != "MACHINE_TRANSLATION" || g.En != "ORIGINAL" || g.Verification != "PRIMARY_SOURCE" {
			t.Fatalf("%+v", g)
		}
	})
	t.Run("VendorResolvesButCountsNothing", func(t *testing.T) {
		var got struct {
			Organization struct {
				Name          string
				IncidentCount int
				Incidents     struct{ TotalCount int }
			}
			Node struct{ ID string }
			All  struct{ TotalCount int }
		}
		ts.data(t, `{ organization(slug: "veltrix") { name incidentCount incidents { totalCount } }
			node(id: "org:veltrix") { id }
			all: incidents(filter: {organizations: ["veltrix"]}) { totalCount } }`, nil, &got)
		if got.Organization.Name != "Veltrix" || got.Organization.IncidentCount != 0 || got.Organization.Incidents.TotalCount != 0 ||
			got.Node.ID != "org:veltrix" || got.All.TotalCount != 0 {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("Filter", func(t *testing.T) {
		for v, want := range map[string][]string{
			"FIRST_PERSON_ACCOUNT": {"IL-0214", "IL-0215", "IL-0217"},
			"SECONDARY_REPORT":     {"IL-0216"},
			"UNKNOWN":              {"IL-0399"}, // not a seed: the record does not say
		} {
			var got struct {
				Incidents struct{ Nodes []struct{ ID string } }
			}
			ts.data(t, `query($v: [Verification!]) { incidents(first: 100, filter: {verification: $v}, orderBy: {field: ID, direction: ASC}) { nodes { id } } }`,
				map[string]any{"v": []string{v}}, &got)
			var ids []string
			for _, n := range got.Incidents.Nodes {
				ids = append(ids, n.ID)
			}
			if !slices.Equal(ids, want) {
				t.Errorf("%s: %v, want %v", v, ids, want)
			}
		}
		r := ts.query(t, `{ incidents(filter: {verification: [MADE_UP]}) { totalCount } }`, nil)
		if len(r.Errors) == 0 {
			t.Fatal("an unknown verification was accepted")
		}
	})
}

// provenanceRecord carries every provenance field, and members the library
// does not know inside them.
const provenanceRecord = `{"id":"IL-0901","org":"Example Studio","org_slug":"example-studio","title":{"en":"Leaderboard stalls","ko":"리더보드 멈춤"},` +
	`"verification":"FIRST_PERSON_ACCOUNT",` +
	`"organization_roles":[{"org":"Veltrix","org_slug":"veltrix","role":"VENDOR","x_contract":"2024"},{"org":"Game Weekly","org_slug":"game-weekly","role":"REPORTER"}],` +
	`"text_origin":{"en":"HUMAN_TRANSLATION","ko":"ORIGINAL","ja":"MACHINE_TRANSLATION"}}`

// oldRecord is a record as written before provenance existed.
const oldRecord = `{"id":"IL-0902","org":"Example Studio","org_slug":"example-studio","title":{"en":"Old record"}}`

func TestProvenanceRoundTrip(t *testing.T) {
	s := newWriteServer(t, wrToken)
	var recs []*incidentlib.Incident
	for _, raw := range []string{provenanceRecord, oldRecord} {
		var inc incidentlib.Incident
		if err := json.Unmarshal([]byte(raw), &inc); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &inc)
	}
	// Through the API, as import --server sends records.
	var res struct {
		Created    int
		UserErrors []struct{ Message string }
	}
	s.mutate(t, `mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { created userErrors { message } } }`,
		map[string]any{"r": []*model.IncidentInput{model.InputOf(recs[0]), model.InputOf(recs[1])}}, "importIncidents", &res)
	if res.Created != 2 || len(res.UserErrors) > 0 {
		t.Fatalf("%+v", res)
	}
	first := s.export(t)
	lines := strings.Split(strings.TrimSpace(first), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, want := range []*incidentlib.Incident{recs[0], recs[1]} {
		var got incidentlib.Incident
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatal(err)
		}
		got.UpdatedAt = ""
		// The author of a record that names none is the importing token
		// (docs/editing.md): here the bootstrap admin.
		w := *want
		if w.Review.WrittenBy == "" {
			w.Review.WrittenBy = incidentlib.BootstrapAdmin.Name
		}
		a, _ := json.Marshal(&got)
		b, _ := json.Marshal(&w)
		if string(a) != string(b) {
			t.Errorf("stored record differs:\n%s\n%s", a, b)
		}
	}
	if !strings.Contains(lines[0], `"x_contract":"2024"`) || !strings.Contains(lines[0], `"ja":"MACHINE_TRANSLATION"`) {
		t.Errorf("unknown members inside the provenance fields were dropped: %s", lines[0])
	}
	for _, name := range []string{"verification", "organization_roles", "text_origin"} {
		if strings.Contains(lines[1], `"`+name+`"`) {
			t.Errorf("an old record is written back with %s: %s", name, lines[1])
		}
	}
	// export → import → export, byte-identical.
	db2 := testutil.ServerStore(t, nil, storage.Options{})
	again, err := importer.ReadRecords("export", []byte(first))
	if err != nil {
		t.Fatal(err)
	}
	var incs []*incidentlib.Incident
	for _, r := range again {
		incs = append(incs, r.Incident)
	}
	if _, err := db2.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := db2.Maintenance().Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if buf.String() != first {
		t.Fatalf("export → import → export is not byte-identical:\n%s\n%s", first, buf.String())
	}
	s.clean(t)

	t.Run("OldRecordReadsUnknownOriginal", func(t *testing.T) {
		r := s.do(t, "", provenanceQuery, map[string]any{"id": "IL-0902"})
		var got provenanceAnswer
		if err := json.Unmarshal(dataJSON(t, r.Data), &got); err != nil || len(r.Errors) > 0 {
			t.Fatalf("%v %+v", err, r.Errors)
		}
		g := got.Incident
		if g.Verification != "UNKNOWN" || g.En != "ORIGINAL" || g.Ko != "ORIGINAL" || len(g.Organizations) != 1 || g.Organizations[0].Role != "AFFECTED" {
			t.Fatalf("%+v", g)
		}
	})
	t.Run("Roles", func(t *testing.T) {
		r := s.do(t, "", provenanceQuery, map[string]any{"id": "IL-0901"})
		var got provenanceAnswer
		if err := json.Unmarshal(dataJSON(t, r.Data), &got); err != nil || len(r.Errors) > 0 {
			t.Fatalf("%v %+v", err, r.Errors)
		}
		var roles []string
		for _, o := range got.Incident.Organizations {
			roles = append(roles, o.Organization.Slug+"/"+o.Role)
		}
		if strings.Join(roles, ",") != "example-studio/AFFECTED,veltrix/VENDOR,game-weekly/REPORTER" ||
			got.Incident.Organization.IncidentCount != 2 || got.Incident.En != "HUMAN_TRANSLATION" {
			t.Fatalf("%+v", got.Incident)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		for name, c := range map[string]struct {
			input map[string]any
			field string
		}{
			"AffectedRole":   {map[string]any{"organizationRoles": []any{map[string]any{"org": "X", "orgSlug": "x", "role": "AFFECTED"}}}, "input.organizationRoles.0.role"},
			"BadRoleSlug":    {map[string]any{"organizationRoles": []any{map[string]any{"org": "X", "orgSlug": "Not A Slug", "role": "VENDOR"}}}, "input.organizationRoles.0.orgSlug"},
			"NameOfTheOther": {map[string]any{"organizationRoles": []any{map[string]any{"org": "Veltrix Inc", "orgSlug": "veltrix", "role": "VENDOR"}}}, "input.organizationRoles.0.org"},
		} {
			t.Run(name, func(t *testing.T) {
				in := map[string]any{"id": "IL-0903", "org": "Example Studio", "orgSlug": "example-studio", "title": map[string]any{"en": "x"}}
				for k, v := range c.input {
					in[k] = v
				}
				before := s.export(t)
				var p struct {
					UserErrors []struct {
						Field []string
						Code  string
					}
				}
				s.mutate(t, `mutation($in: IncidentInput!) { upsertIncident(input: $in) { userErrors { field code } } }`,
					map[string]any{"in": in}, "upsertIncident", &p)
				if len(p.UserErrors) == 0 || p.UserErrors[0].Code != "INVALID" || strings.Join(p.UserErrors[0].Field, ".") != c.field {
					t.Fatalf("%+v, want INVALID at %s", p.UserErrors, c.field)
				}
				if s.export(t) != before {
					t.Fatal("a refused write changed the store")
				}
			})
		}
	})
	t.Run("DeletingTheLastNamingIncidentRemovesTheOrganization", func(t *testing.T) {
		var p struct{ DeletedID string }
		s.mutate(t, `mutation { deleteIncident(id: "IL-0901") { deletedId } }`, nil, "deleteIncident", &p)
		r := s.do(t, "", `{ organization(slug: "game-weekly") { name } }`, nil)
		if string(r.Data["organization"]) != "null" {
			t.Fatalf("game-weekly is still there: %s", r.Data["organization"])
		}
		s.clean(t)
	})
}

func dataJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerificationFilterBruteForce: the verification filter, alone and
// with other filters, selects exactly what a scan of the records selects,
// over a generated corpus given random provenance (seeded: deterministic).
func TestVerificationFilterBruteForce(t *testing.T) {
	incs := corpus(t, 400, 22)
	rng := rand.New(rand.NewSource(22))
	values := []incidentlib.Verification{"", incidentlib.VerificationPrimarySource, incidentlib.VerificationSecondaryReport,
		incidentlib.VerificationFirstPersonAccount, incidentlib.VerificationUnknown}
	for _, inc := range incs {
		inc.Verification = values[rng.Intn(len(values))]
	}
	ts := newTestServer(t, incs)
	all := incidentlib.Verifications
	for mask := 1; mask < 1<<len(all); mask++ {
		var want []incidentlib.Verification
		var names []string
		for i, v := range all {
			if mask&(1<<i) != 0 {
				want = append(want, v)
				names = append(names, string(v))
			}
		}
		for _, reviewed := range []any{nil, false} {
			var ids []string
			for _, inc := range incs {
				if slices.Contains(want, inc.Verification.OrUnknown()) && (reviewed == nil || inc.Review.ReviewedAt == "") {
					ids = append(ids, inc.ID)
				}
			}
			slices.Sort(ids)
			filter := map[string]any{"verification": names}
			if reviewed != nil {
				filter["reviewed"] = reviewed
			}
			var got []string
			var total int
			vars := map[string]any{"f": filter, "after": nil}
			for {
				var page struct {
					Incidents struct {
						TotalCount int
						Nodes      []struct{ ID string }
						PageInfo   struct {
							HasNextPage bool
							EndCursor   string
						}
					}
				}
				ts.data(t, `query($f: IncidentFilter, $after: String) { incidents(first: 100, after: $after, filter: $f, orderBy: {field: ID, direction: ASC}) {
					totalCount nodes { id } pageInfo { hasNextPage endCursor } } }`, vars, &page)
				total = page.Incidents.TotalCount
				for _, n := range page.Incidents.Nodes {
					got = append(got, n.ID)
				}
				if !page.Incidents.PageInfo.HasNextPage {
					break
				}
				vars["after"] = page.Incidents.PageInfo.EndCursor
			}
			if !slices.Equal(got, ids) || total != len(ids) {
				t.Fatalf("verification %v reviewed %v: %d ids (total %d), want %d", names, reviewed, len(got), total, len(ids))
			}
		}
	}
}
