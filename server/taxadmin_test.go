package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// taxState is everything an admin's refused change must leave as it was,
// beside idServer.state: the taxonomy, the organizations and the history.
func (s *idServer) taxState(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	terms, _ := json.Marshal(s.db.Taxonomies().Taxonomy().Terms)
	first := 100
	orgs, err := s.db.Taxonomies().FindOrganizations(ctx, incidentlib.PageArgs{First: &first})
	if err != nil {
		tb.Fatal(err)
	}
	o, _ := json.Marshal(orgs.Organizations)
	h, err := s.db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{})
	if err != nil {
		tb.Fatal(err)
	}
	return s.state(tb) + string(terms) + string(o) + fmt.Sprint(h.TotalCount)
}

// TestTaxonomyMutationsNeedAdmin: each mutation of the taxonomy and the
// organizations, and the history, is allowed for an admin and refused for
// an editor and a reviewer (403 FORBIDDEN) and a reader (401), before any
// resolver runs; a refusal writes nothing.
func TestTaxonomyMutationsNeedAdmin(t *testing.T) {
	s := newIDServer(t, server.Config{ResponseCacheBytes: -1})
	secrets := map[incidentlib.Role]string{
		incidentlib.RoleEditor:   apiToken(t, s.db, "ed", incidentlib.RoleEditor),
		incidentlib.RoleReviewer: apiToken(t, s.db, "rev", incidentlib.RoleReviewer),
		incidentlib.RoleAdmin:    apiToken(t, s.db, "adm", incidentlib.RoleAdmin),
	}
	n := 0
	next := func() string { n++; return fmt.Sprintf("t%d", n) }
	org := func() string {
		slug := "org-" + next()
		if _, err := s.db.Taxonomies().AddOrganization(context.Background(), "setup", incidentlib.Organization{Slug: slug, Name: "Name " + slug}); err != nil {
			t.Fatal(err)
		}
		return slug
	}
	ops := []struct {
		name  string
		query func(t *testing.T) (string, map[string]any)
	}{
		{"addTerm", func(t *testing.T) (string, map[string]any) {
			return `mutation($s: String!) { addTerm(input: {kind: SYMPTOM, slug: $s, label: {en: "New", ko: "새"}}) { term { slug } userErrors { code } } }`,
				map[string]any{"s": "new-" + next()}
		}},
		{"updateTerm", func(t *testing.T) (string, map[string]any) {
			return `mutation($l: String) { updateTerm(kind: SYMPTOM, slug: "high-latency", label: {en: $l}) { term { slug } userErrors { code } } }`,
				map[string]any{"l": "Slow " + next()}
		}},
		{"addTermAliases", func(t *testing.T) (string, map[string]any) {
			return `mutation($a: String!) { addTermAliases(kind: SYMPTOM, slug: "high-latency", aliases: [$a]) { term { slug } userErrors { code } } }`,
				map[string]any{"a": "slow-" + next()}
		}},
		{"deprecateTerm", func(t *testing.T) (string, map[string]any) {
			slug := "dep-" + next()
			if _, err := s.db.Taxonomies().AddTerm(context.Background(), "setup", incidentlib.Term{Kind: incidentlib.KindSymptom, Slug: slug, Label: incidentlib.Text{En: "D"}}); err != nil {
				t.Fatal(err)
			}
			return `mutation($s: String!) { deprecateTerm(kind: SYMPTOM, slug: $s) { term { deprecated } userErrors { code } } }`, map[string]any{"s": slug}
		}},
		{"addOrganization", func(t *testing.T) (string, map[string]any) {
			slug := "added-" + next()
			return `mutation($s: String!, $n: String!) { addOrganization(slug: $s, name: $n) { organization { slug } userErrors { code } } }`,
				map[string]any{"s": slug, "n": "Added " + slug}
		}},
		{"renameOrganization", func(t *testing.T) (string, map[string]any) {
			return `mutation($s: String!, $n: String!) { renameOrganization(slug: $s, name: $n) { organization { name } userErrors { code } } }`,
				map[string]any{"s": org(), "n": "Renamed " + next()}
		}},
		{"mergeOrganizations", func(t *testing.T) (string, map[string]any) {
			return `mutation($f: String!, $i: String!) { mergeOrganizations(from: $f, into: $i) { organization { slug } userErrors { code } } }`,
				map[string]any{"f": org(), "i": org()}
		}},
		{"taxonomyHistory", func(t *testing.T) (string, map[string]any) {
			return `{ taxonomyHistory(first: 5) { totalCount nodes { action author } } }`, nil
		}},
	}
	roles := []incidentlib.Role{incidentlib.RoleReader, incidentlib.RoleEditor, incidentlib.RoleReviewer, incidentlib.RoleAdmin}
	for _, op := range ops {
		for _, role := range roles {
			t.Run(op.name+"/"+role.String(), func(t *testing.T) {
				q, vars := op.query(t)
				auth := ""
				if role != incidentlib.RoleReader {
					auth = "Bearer " + secrets[role]
				}
				before, seq, w := s.taxState(t), s.db.Incidents().Seq(), s.Work()
				r := s.send(t, auth, q, vars)
				if role == incidentlib.RoleAdmin {
					if r.Status != http.StatusOK || len(r.Errors) > 0 || strings.Contains(string(r.Raw), `"code"`) {
						t.Fatalf("allowed: status %d %s", r.Status, r.Raw)
					}
					if op.name != "taxonomyHistory" && (s.db.Incidents().Seq() == seq || s.taxState(t) == before) {
						t.Fatalf("the admin's %s changed nothing: %s", op.name, r.Raw)
					}
					return
				}
				wantStatus, wantCode := http.StatusForbidden, incidentlib.EFORBIDDEN
				if role == incidentlib.RoleReader {
					wantStatus, wantCode = http.StatusUnauthorized, incidentlib.EUNAUTHENTICATED
				}
				if r.Status != wantStatus || r.Code() != wantCode {
					t.Fatalf("refused: status %d, want %d %s: %s", r.Status, wantStatus, wantCode, r.Raw)
				}
				if got := s.Work(); got != w {
					t.Fatalf("a refused request ran resolvers or read the store: %+v, then %+v", w, got)
				}
				if s.db.Incidents().Seq() != seq || s.taxState(t) != before {
					t.Fatal("a refused request changed the store")
				}
			})
		}
	}
	// Every change is in the history with its author and before/after.
	r := s.send(t, "Bearer "+secrets[incidentlib.RoleAdmin], `{ taxonomyHistory(first: 100) { totalCount nodes { number action author subject before after } } }`, nil)
	var h struct {
		TaxonomyHistory struct {
			TotalCount int
			Nodes      []struct {
				Number        int
				Action        string
				Author        string
				Subject       string
				Before, After json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(r.Data, &h); err != nil {
		t.Fatal(err, string(r.Raw))
	}
	authors := map[string]int{}
	for k, e := range h.TaxonomyHistory.Nodes {
		authors[e.Author]++
		if k > 0 && e.Number >= h.TaxonomyHistory.Nodes[k-1].Number {
			t.Fatalf("history not newest first: %+v", h.TaxonomyHistory.Nodes)
		}
		if e.After == nil || string(e.After) == "null" {
			t.Fatalf("entry without after: %+v", e)
		}
		if e.Action == "UPDATE_TERM" && (e.Before == nil || string(e.Before) == "null") {
			t.Fatalf("an update without before: %+v", e)
		}
	}
	if authors["adm"] != 7 {
		t.Fatalf("the admin's changes in the history: %v", authors)
	}
}

// taxGQL is a client of one server: it posts an operation with a token and
// decodes data into out, failing on errors.
type taxGQL struct {
	s     *idServer
	token string
}

func (c taxGQL) do(t *testing.T, q string, vars map[string]any, out any) {
	t.Helper()
	auth := ""
	if c.token != "" {
		auth = "Bearer " + c.token
	}
	r := c.s.send(t, auth, q, vars)
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			t.Fatal(err, string(r.Raw))
		}
	}
}

type userErrs []struct {
	Code  string
	Field []string
}

const upsertQ = `mutation($i: IncidentInput!) { upsertIncident(input: $i) { incident { id symptoms { slug deprecated } } userErrors { code field } } }`

type upsertAns struct {
	UpsertIncident struct {
		Incident *struct {
			ID       string
			Symptoms []struct {
				Slug       string
				Deprecated bool
			}
		}
		UserErrors userErrs
	}
}

func upsertInput(id string, symptoms ...string) map[string]any {
	return map[string]any{"id": id, "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "t " + id}, "symptoms": symptoms}
}

func idsOf(t *testing.T, c taxGQL, filter map[string]any) []string {
	t.Helper()
	var out struct {
		Incidents struct{ Nodes []struct{ ID string } }
	}
	c.do(t, `query($f: IncidentFilter) { incidents(filter: $f, first: 100) { nodes { id } } }`, map[string]any{"f": filter}, &out)
	var ids []string
	for _, n := range out.Incidents.Nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

// TestTermChangesLive: a term an admin adds is accepted by the next
// upsert without a restart, answered by term(), its aliases resolve on
// writes and filters, and a relabel shows at once although the response
// cache (keyed by the store sequence) answered the same query before.
func TestTermChangesLive(t *testing.T) {
	s := newIDServer(t, server.Config{})
	admin := taxGQL{s, apiToken(t, s.db, "boss", incidentlib.RoleAdmin)}
	editor := taxGQL{s, apiToken(t, s.db, "alice", incidentlib.RoleEditor)}
	reader := taxGQL{s: s}

	var up upsertAns
	editor.do(t, upsertQ, map[string]any{"i": upsertInput("IL-0001", "quantum-flux")}, &up)
	if len(up.UpsertIncident.UserErrors) != 1 || up.UpsertIncident.UserErrors[0].Code != "INVALID" {
		t.Fatalf("an unknown term: %+v", up)
	}

	const termQ = `{ term(kind: SYMPTOM, slug: "quantum-flux") { slug label(lang: EN) ko: label(lang: KO) deprecated aliases } }`
	var tq struct {
		Term *struct{ Slug, Label, Ko string }
	}
	reader.do(t, termQ, nil, &tq)
	if tq.Term != nil {
		t.Fatalf("term before it is added: %+v", tq)
	}
	var add struct{ AddTerm struct{ UserErrors userErrs } }
	admin.do(t, `mutation { addTerm(input: {kind: SYMPTOM, slug: "quantum-flux", label: {en: "Quantum flux", ko: "양자 흐름"}, description: {en: "The flux."}}) { term { slug } userErrors { code field } } }`, nil, &add)
	if len(add.AddTerm.UserErrors) > 0 {
		t.Fatalf("%+v", add)
	}
	reader.do(t, termQ, nil, &tq)
	if tq.Term == nil || tq.Term.Label != "Quantum flux" || tq.Term.Ko != "양자 흐름" {
		t.Fatalf("term after it was added: %+v", tq)
	}
	editor.do(t, upsertQ, map[string]any{"i": upsertInput("IL-0001", "quantum-flux")}, &up)
	if len(up.UpsertIncident.UserErrors) > 0 || up.UpsertIncident.Incident == nil {
		t.Fatalf("the added term refused: %+v", up)
	}

	// Aliases resolve on writes and filters.
	admin.do(t, `mutation { addTermAliases(kind: SYMPTOM, slug: "quantum-flux", aliases: ["qflux", "q flux"]) { userErrors { code } } }`, nil, nil)
	editor.do(t, upsertQ, map[string]any{"i": upsertInput("IL-0002", "qflux", "high-latency")}, &up)
	if len(up.UpsertIncident.UserErrors) > 0 || up.UpsertIncident.Incident.Symptoms[0].Slug != "quantum-flux" {
		t.Fatalf("an alias on a write: %+v", up)
	}
	if got := idsOf(t, reader, map[string]any{"symptoms": []string{"qflux"}}); !slices.Equal(got, []string{"IL-0001", "IL-0002"}) {
		t.Fatalf("filter by alias: %v", got)
	}
	// An alias taken by another term is a conflict; a malformed one is invalid.
	var al struct{ AddTermAliases struct{ UserErrors userErrs } }
	admin.do(t, `mutation { addTermAliases(kind: SYMPTOM, slug: "high-latency", aliases: ["qflux", "Bad\u0007"]) { userErrors { code field } } }`, nil, &al)
	if ue := al.AddTermAliases.UserErrors; len(ue) != 1 || ue[0].Code != "INVALID" || !slices.Equal(ue[0].Field, []string{"aliases", "1"}) {
		t.Fatalf("bad aliases: %+v", al)
	}
	admin.do(t, `mutation { addTermAliases(kind: SYMPTOM, slug: "high-latency", aliases: ["qflux"]) { userErrors { code field } } }`, nil, &al)
	if ue := al.AddTermAliases.UserErrors; len(ue) != 1 || ue[0].Code != "CONFLICT" {
		t.Fatalf("a taken alias: %+v", al)
	}

	// A relabel is seen at once, through the response cache.
	for range 2 {
		reader.do(t, termQ, nil, &tq)
	}
	admin.do(t, `mutation { updateTerm(kind: SYMPTOM, slug: "quantum-flux", label: {en: "Flux (quantum)"}) { userErrors { code } } }`, nil, nil)
	reader.do(t, termQ, nil, &tq)
	if tq.Term.Label != "Flux (quantum)" || tq.Term.Ko != "양자 흐름" {
		t.Fatalf("after the relabel: %+v", tq)
	}
	var inc struct {
		Incident struct{ Symptoms []struct{ Label string } }
	}
	reader.do(t, `{ incident(id: "IL-0001") { symptoms { label } } }`, nil, &inc)
	if len(inc.Incident.Symptoms) != 1 || inc.Incident.Symptoms[0].Label != "Flux (quantum)" {
		t.Fatalf("an incident's term after the relabel: %+v", inc)
	}

	// Client mistakes are userErrors with the field, never INTERNAL, and
	// write nothing.
	seq := s.db.Incidents().Seq()
	for _, q := range []string{
		`mutation { addTerm(input: {kind: SYMPTOM, slug: "Not A Slug", label: {en: ""}}) { userErrors { code field } } }`,
		`mutation { addTerm(input: {kind: SYMPTOM, slug: "high-latency", label: {en: "dup"}}) { userErrors { code field } } }`,
		`mutation { addTerm(input: {kind: SYMPTOM, slug: "qflux", label: {en: "alias"}}) { userErrors { code field } } }`,
		`mutation { updateTerm(kind: SYMPTOM, slug: "no-such-term", label: {en: "x"}) { userErrors { code field } } }`,
		`mutation { updateTerm(kind: SYMPTOM, slug: "high-latency", label: {en: "line\nbreak"}) { userErrors { code field } } }`,
		`mutation { deprecateTerm(kind: DOMAIN, slug: "no-such-term") { userErrors { code field } } }`,
	} {
		r := s.send(t, "Bearer "+admin.token, q, nil)
		if r.Status != http.StatusOK || len(r.Errors) > 0 || !strings.Contains(string(r.Raw), `"userErrors":[{`) || strings.Contains(string(r.Raw), "INTERNAL") {
			t.Fatalf("%s: %d %s", q, r.Status, r.Raw)
		}
	}
	if s.db.Incidents().Seq() != seq {
		t.Fatal("a refused change wrote")
	}
}

// TestDeprecatedTerm: a deprecated term is refused where an upsert adds it,
// kept where an incident has it already (which can still be edited), shown
// as deprecated, and accepted by an import.
func TestDeprecatedTerm(t *testing.T) {
	s := newIDServer(t, server.Config{})
	admin := taxGQL{s, apiToken(t, s.db, "boss", incidentlib.RoleAdmin)}
	editor := taxGQL{s, apiToken(t, s.db, "alice", incidentlib.RoleEditor)}
	var up upsertAns
	editor.do(t, upsertQ, map[string]any{"i": upsertInput("IL-0001", "high-latency")}, &up)
	var dep struct {
		DeprecateTerm struct {
			Term struct{ Deprecated bool }
		}
	}
	admin.do(t, `mutation { deprecateTerm(kind: SYMPTOM, slug: "high-latency") { term { deprecated } userErrors { code } } }`, nil, &dep)
	if !dep.DeprecateTerm.Term.Deprecated {
		t.Fatalf("%+v", dep)
	}
	seq := s.db.Incidents().Seq()
	editor.do(t, upsertQ, map[string]any{"i": upsertInput("IL-0002", "partial-outage", "high-latency")}, &up)
	if ue := up.UpsertIncident.UserErrors; len(ue) != 1 || ue[0].Code != "INVALID" || !slices.Equal(ue[0].Field, []string{"input", "symptoms", "1"}) {
		t.Fatalf("a deprecated term added: %+v", up)
	}
	if s.db.Incidents().Seq() != seq {
		t.Fatal("the refused upsert wrote")
	}
	in := upsertInput("IL-0001", "high-latency", "partial-outage")
	in["title"] = map[string]any{"en": "edited"}
	editor.do(t, upsertQ, map[string]any{"i": in}, &up)
	if len(up.UpsertIncident.UserErrors) > 0 || !up.UpsertIncident.Incident.Symptoms[0].Deprecated {
		t.Fatalf("an incident keeping its deprecated term: %+v", up)
	}
	var imp struct{ ImportIncidents struct{ UserErrors userErrs } }
	editor.do(t, `mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { userErrors { code field } } }`,
		map[string]any{"r": []any{upsertInput("IL-0003", "high-latency")}}, &imp)
	if len(imp.ImportIncidents.UserErrors) > 0 {
		t.Fatalf("an import with a deprecated term: %+v", imp)
	}
	// Taken back, it can be added again.
	admin.do(t, `mutation { deprecateTerm(kind: SYMPTOM, slug: "high-latency", deprecated: false) { userErrors { code } } }`, nil, nil)
	editor.do(t, upsertQ, map[string]any{"i": upsertInput("IL-0002", "high-latency")}, &up)
	if len(up.UpsertIncident.UserErrors) > 0 {
		t.Fatalf("after the deprecation was taken back: %+v", up)
	}
}

// TestOrganizationMerge: a merge re-points every incident (as the affected
// organization and in roles) through the write path: filters, counts and
// organization(slug:) by the old slug follow, check stays clean, the change
// log carries the re-pointed records, and all of it survives a reopen.
func TestOrganizationMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "merge.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(id, org, slug string, roles ...incidentlib.OrgRole) {
		inc := &incidentlib.Incident{ID: id, Org: org, OrgSlug: slug, Title: incidentlib.Text{En: id}, OrganizationRoles: roles}
		if _, err := db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("IL-0001", "Acme", "acme")
	put("IL-0002", "Acme Inc.", "acme-inc")
	put("IL-0003", "Acme Inc.", "acme-inc")
	put("IL-0004", "Other", "other", incidentlib.OrgRole{Org: "Acme Inc.", OrgSlug: "acme-inc", Role: incidentlib.RoleVendor})
	before := db.Incidents().Seq()
	hs, _ := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{})
	s := &idServer{CountingServer: &testutil.CountingServer{Server: hs, DB: db, Fields: &testutil.FieldCounter{}}, db: db}
	admin := taxGQL{s, apiToken(t, db, "boss", incidentlib.RoleAdmin)}
	reader := taxGQL{s: s}

	if got := idsOf(t, reader, map[string]any{"organizations": []string{"acme-inc"}}); !slices.Equal(got, []string{"IL-0002", "IL-0003"}) {
		t.Fatalf("before: %v", got)
	}
	var m struct {
		MergeOrganizations struct {
			Organization struct{ Slug string }
			IncidentIds  []string
			UserErrors   userErrs
		}
	}
	admin.do(t, `mutation { mergeOrganizations(from: "acme-inc", into: "acme") { organization { slug } incidentIds userErrors { code field } } }`, nil, &m)
	if m.MergeOrganizations.Organization.Slug != "acme" || !slices.Equal(m.MergeOrganizations.IncidentIds, []string{"IL-0002", "IL-0003", "IL-0004"}) {
		t.Fatalf("%+v", m)
	}
	// Mistakes are userErrors.
	admin.do(t, `mutation { mergeOrganizations(from: "acme-inc", into: "acme") { userErrors { code field } } }`, nil, &m)
	if ue := m.MergeOrganizations.UserErrors; len(ue) != 1 || ue[0].Code != "NOT_FOUND" || !slices.Equal(ue[0].Field, []string{"from"}) {
		t.Fatalf("merging again: %+v", m)
	}
	check := func(t *testing.T, c taxGQL, db *storage.DB) {
		t.Helper()
		if got := idsOf(t, c, map[string]any{"organizations": []string{"acme-inc"}}); !slices.Equal(got, []string{"IL-0001", "IL-0002", "IL-0003"}) {
			t.Fatalf("filter by the old slug: %v", got)
		}
		var o struct {
			Organization *struct {
				Slug, Name    string
				IncidentCount int
			}
			Organizations struct{ TotalCount int }
			Incident      struct {
				Organizations []struct{ Organization struct{ Slug string } }
			}
		}
		c.do(t, `{ organization(slug: "acme-inc") { slug name incidentCount } organizations { totalCount }
			incident(id: "IL-0004") { organizations { organization { slug } } } }`, nil, &o)
		if o.Organization == nil || o.Organization.Slug != "acme" || o.Organization.Name != "Acme" || o.Organization.IncidentCount != 3 || o.Organizations.TotalCount != 2 {
			t.Fatalf("organization by the old slug: %+v", o)
		}
		if len(o.Incident.Organizations) != 2 || o.Incident.Organizations[1].Organization.Slug != "acme" {
			t.Fatalf("a vendor role re-pointed: %+v", o.Incident)
		}
		if problems, err := db.Maintenance().Check(context.Background()); err != nil || len(problems) > 0 {
			t.Fatalf("check: %v %v", problems, err)
		}
	}
	check(t, reader, db)
	changes, err := db.Incidents().ChangesSince(ctx, before, 100)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, c := range changes {
		changed = append(changed, c.ID)
	}
	if !slices.Equal(changed, []string{"IL-0002", "IL-0003", "IL-0004"}) {
		t.Fatalf("the change log: %v", changed)
	}

	// Reopened, the store keeps it all.
	hs.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	hs2, _ := testutil.ServerTest(t, db2, server.Config{}, testutil.ServerParts{})
	check(t, taxGQL{s: &idServer{CountingServer: &testutil.CountingServer{Server: hs2, DB: db2, Fields: &testutil.FieldCounter{}}, db: db2}}, db2)
}

// TestOrganizationRenameAndAdd: a rename rewrites every incident that
// names the organization, after which an edit of one of them with the new
// name is accepted; an added organization is listed without incidents and
// check stays clean.
func TestOrganizationRenameAndAdd(t *testing.T) {
	s := newIDServer(t, server.Config{})
	admin := taxGQL{s, apiToken(t, s.db, "boss", incidentlib.RoleAdmin)}
	editor := taxGQL{s, apiToken(t, s.db, "alice", incidentlib.RoleEditor)}
	s.put(t, "IL-0001", "IL-0002")
	var r struct {
		RenameOrganization struct {
			Organization struct{ Name string }
			IncidentIds  []string
		}
	}
	admin.do(t, `mutation { renameOrganization(slug: "acme", name: "ACME Corporation") { organization { name } incidentIds } }`, nil, &r)
	if r.RenameOrganization.Organization.Name != "ACME Corporation" || len(r.RenameOrganization.IncidentIds) != 2 {
		t.Fatalf("%+v", r)
	}
	var inc struct {
		Incident struct{ Organization struct{ Name string } }
	}
	editor.do(t, `{ incident(id: "IL-0002") { organization { name } } }`, nil, &inc)
	if inc.Incident.Organization.Name != "ACME Corporation" {
		t.Fatalf("%+v", inc)
	}
	in := upsertInput("IL-0002")
	in["org"] = "ACME Corporation"
	var up upsertAns
	editor.do(t, upsertQ, map[string]any{"i": in}, &up)
	if len(up.UpsertIncident.UserErrors) > 0 {
		t.Fatalf("an edit after the rename: %+v", up)
	}
	var a struct{ AddOrganization struct{ UserErrors userErrs } }
	admin.do(t, `mutation { addOrganization(slug: "globex", name: "Globex") { userErrors { code field } } }`, nil, &a)
	admin.do(t, `mutation { addOrganization(slug: "globex-2", name: " globex ") { userErrors { code field } } }`, nil, &a)
	if ue := a.AddOrganization.UserErrors; len(ue) != 1 || ue[0].Code != "INVALID" || !slices.Equal(ue[0].Field, []string{"name"}) {
		t.Fatalf("a name with spaces: %+v", a)
	}
	admin.do(t, `mutation { addOrganization(slug: "globex-2", name: "GLOBEX") { userErrors { code field } } }`, nil, &a)
	if ue := a.AddOrganization.UserErrors; len(ue) != 1 || ue[0].Code != "CONFLICT" {
		t.Fatalf("a name taken: %+v", a)
	}
	var o struct {
		Organization struct {
			Name          string
			IncidentCount int
		}
	}
	editor.do(t, `{ organization(slug: "globex") { name incidentCount } }`, nil, &o)
	if o.Organization.Name != "Globex" || o.Organization.IncidentCount != 0 {
		t.Fatalf("%+v", o)
	}
	if problems, err := s.db.Maintenance().Check(context.Background()); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// TestTaxonomyChangesUnderReads: readers and writers run while an admin
// adds terms; every write of a term that was added before it is accepted
// and every term added is answered afterwards (run with -race, the swap of
// the taxonomy and of the resolver's views is checked too).
func TestTaxonomyChangesUnderReads(t *testing.T) {
	s := newIDServer(t, server.Config{})
	admin := taxGQL{s, apiToken(t, s.db, "boss", incidentlib.RoleAdmin)}
	editor := taxGQL{s, apiToken(t, s.db, "alice", incidentlib.RoleEditor)}
	reader := taxGQL{s: s}
	const n = 12
	done := make(chan struct{})
	errs := make(chan string, 4)
	for g := range 3 {
		go func() {
			for {
				select {
				case <-done:
					errs <- ""
					return
				default:
				}
				r := s.send(t, "", `{ taxonomy(kind: SYMPTOM) { slug label deprecated aliases } incidents(first: 5) { nodes { id symptoms { slug label } } } }`, nil)
				if r.Status != http.StatusOK || len(r.Errors) > 0 {
					errs <- fmt.Sprintf("reader %d: %d %s", g, r.Status, r.Raw)
					return
				}
			}
		}()
	}
	for i := range n {
		slug := fmt.Sprintf("live-%d", i)
		var add struct{ AddTerm struct{ UserErrors userErrs } }
		admin.do(t, `mutation($s: String!) { addTerm(input: {kind: SYMPTOM, slug: $s, label: {en: $s}}) { userErrors { code field } } }`, map[string]any{"s": slug}, &add)
		if len(add.AddTerm.UserErrors) > 0 {
			t.Fatalf("%+v", add)
		}
		var up upsertAns
		editor.do(t, upsertQ, map[string]any{"i": upsertInput(fmt.Sprintf("IL-%04d", i+1), slug)}, &up)
		if len(up.UpsertIncident.UserErrors) > 0 {
			t.Fatalf("a term added just before: %+v", up)
		}
	}
	close(done)
	for range 3 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
	var tax struct{ Taxonomy []struct{ Slug string } }
	reader.do(t, `{ taxonomy(kind: SYMPTOM) { slug } }`, nil, &tax)
	live := 0
	for _, term := range tax.Taxonomy {
		if strings.HasPrefix(term.Slug, "live-") {
			live++
		}
	}
	if live != n {
		t.Fatalf("%d of %d added terms answered", live, n)
	}
}
