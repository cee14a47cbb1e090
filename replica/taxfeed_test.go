package replica_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/replica"
	"github.com/incidentlib/incidentlib/storage"
)

// taxonomyOf is the state of db's taxonomy and organizations that a
// replica must share with its primary: every term as JSON, the
// organizations, and what each history entry did to what.
func taxonomyOf(tb testing.TB, db *storage.DB) string {
	tb.Helper()
	var b strings.Builder
	tax := db.Taxonomies().Taxonomy()
	for _, k := range incidentlib.TermKinds {
		for _, t := range tax.Kind(k) {
			j, _ := json.Marshal(t)
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	entries, err := db.Taxonomies().TaxonomyChangesAfter(context.Background(), 0, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s %s %v\n", e.Action, e.Subject, e.After, e.Incidents)
	}
	return b.String()
}

// adminChanges makes, on the primary, each kind of change of the taxonomy
// and the organizations, and writes a record that uses the new term. The
// last change is of the taxonomy alone.
func adminChanges(tb testing.TB, p *primary) (term, mergedAway string) {
	tb.Helper()
	ctx := context.Background()
	boss := incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: "boss", Role: incidentlib.RoleAdmin})
	term = "clock-skew-storm"
	if _, err := p.db.Taxonomies().AddTerm(ctx, "boss", incidentlib.Term{Kind: incidentlib.KindSymptom, Slug: term,
		Label: incidentlib.Text{En: "Clock skew storm", Ko: "시계 어긋남 폭주"}}); err != nil {
		tb.Fatal(err)
	}
	incs, err := p.db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0001"})
	if err != nil || incs[0] == nil {
		tb.Fatal(err)
	}
	c := *incs[0]
	c.Symptoms = append([]string{term}, c.Symptoms...)
	c.Review = incidentlib.Review{}
	if _, err := p.db.Incidents().UpsertIncident(boss, &c, incidentlib.WriteOptions{}); err != nil {
		tb.Fatal(err)
	}
	relabel := incidentlib.Text{En: "Clock skew cascade"}
	if _, err := p.db.Taxonomies().UpdateTerm(ctx, "boss", incidentlib.KindSymptom, term, incidentlib.TermUpdate{Label: &relabel}); err != nil {
		tb.Fatal(err)
	}
	if _, err := p.db.Taxonomies().AddTermAliases(ctx, "boss", incidentlib.KindSymptom, term, []string{"ntp-storm"}); err != nil {
		tb.Fatal(err)
	}
	first := 2
	orgs, err := p.db.Taxonomies().FindOrganizations(ctx, incidentlib.PageArgs{First: &first})
	if err != nil || len(orgs.Organizations) < 2 {
		tb.Fatalf("%v %v", orgs, err)
	}
	mergedAway = orgs.Organizations[0].Slug
	if _, err := p.db.Taxonomies().MergeOrganizations(ctx, "boss", mergedAway, orgs.Organizations[1].Slug); err != nil {
		tb.Fatal(err)
	}
	if _, err := p.db.Taxonomies().AddOrganization(ctx, "boss", incidentlib.Organization{Slug: "quiet-newcomer", Name: "Quiet Newcomer"}); err != nil {
		tb.Fatal(err)
	}
	if _, err := p.db.Taxonomies().DeprecateTerm(ctx, "boss", incidentlib.KindSymptom, term, true); err != nil {
		tb.Fatal(err)
	}
	return term, mergedAway
}

// checkReplicaTaxonomy: the replica holds the primary's taxonomy, its
// history, the organizations and the aliases of merged ones, and the
// record that uses the added term.
func checkReplicaTaxonomy(tb testing.TB, p *primary, rdb *storage.DB, term, mergedAway string) {
	tb.Helper()
	ctx := context.Background()
	if a, b := taxonomyOf(tb, p.db), taxonomyOf(tb, rdb); a != b {
		tb.Fatalf("the replica's taxonomy differs:\nprimary:\n%s\nreplica:\n%s", a, b)
	}
	tm := rdb.Taxonomies().Taxonomy().Term(incidentlib.KindSymptom, term)
	if tm == nil || tm.Label.En != "Clock skew cascade" || !tm.Deprecated || rdb.Taxonomies().Taxonomy().Canonical(incidentlib.KindSymptom, "ntp-storm") != term {
		tb.Fatalf("the replica's term: %+v", tm)
	}
	incs, err := rdb.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0001"})
	if err != nil || incs[0] == nil || incs[0].Symptoms[0] != term {
		tb.Fatalf("the record with the new term on the replica: %+v %v", incs[0], err)
	}
	for _, db := range []*storage.DB{p.db, rdb} {
		n, err := db.Incidents().CountIncidents(ctx, incidentlib.IncidentFilter{Organizations: []string{mergedAway}})
		if err != nil || n == 0 {
			tb.Fatalf("the merged organization's slug resolves to no incident: %d %v", n, err)
		}
	}
	if o, err := rdb.Taxonomies().FindOrganizationsBySlugs(ctx, []string{"quiet-newcomer"}); err != nil || o[0] == nil {
		tb.Fatalf("the added organization on the replica: %v %v", o, err)
	}
	sameLibrary(tb, p.db, rdb)
}

// levelReplica serves a primary of n incidents and starts a replica
// following it by long poll, level with it when it returns.
func levelReplica(t *testing.T, n int) (*primary, *httptest.Server, *storage.DB, *follower) {
	t.Helper()
	p := newPrimary(t, n)
	ts := httptest.NewServer(p.srv)
	t.Cleanup(ts.Close)
	rdb := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { rdb.Close() })
	f := startFollower(t, rdb, ts.URL, func(c *replica.Config) { c.Wait = 200 * time.Millisecond })
	f.waitSeq(t, p.db.Incidents().Seq())
	return p, ts, rdb, f
}

// An admin adds a term on the primary and a record uses it; the term is
// relabelled, aliased and deprecated, organizations merged and added. A
// running replica ends with the same taxonomy and the record (not
// skipped), and its position reaches the primary's sequence although the
// last change was of the taxonomy alone; a replica started afterwards
// catches up to the same.
func TestFollowerTakesTheTaxonomy(t *testing.T) {
	p, ts, rdb, f := levelReplica(t, 60)

	term, mergedAway := adminChanges(t, p)
	f.waitSeq(t, p.db.Incidents().Seq())
	checkReplicaTaxonomy(t, p, rdb, term, mergedAway)
	st := f.Status()
	if st.Skipped != 0 || st.TaxonomySkipped != 0 || st.TaxonomyApplied != 6 {
		t.Fatalf("status %+v", st)
	}
	if got := f.metric(t, "incidentlib_follow_seq"); got != float64(p.db.Incidents().Seq()) {
		t.Fatalf("incidentlib_follow_seq %v, primary at %d", got, p.db.Incidents().Seq())
	}

	// A change of the taxonomy alone, once the replica is level: its
	// position follows the primary's sequence.
	ctx := context.Background()
	if _, err := p.db.Taxonomies().DeprecateTerm(ctx, "boss", incidentlib.KindSymptom, term, false); err != nil {
		t.Fatal(err)
	}
	f.waitSeq(t, p.db.Incidents().Seq())
	if rdb.Taxonomies().Taxonomy().Deprecated(incidentlib.KindSymptom, term) {
		t.Fatal("the replica did not take the deprecation back")
	}
	f.stop()

	// A replica started after the changes.
	late := openStore(t, filepath.Join(t.TempDir(), "late.db"))
	t.Cleanup(func() { late.Close() })
	if _, err := p.db.Taxonomies().DeprecateTerm(ctx, "boss", incidentlib.KindSymptom, term, true); err != nil {
		t.Fatal(err)
	}
	// With a replica's token, the authors come too.
	secret, _, err := p.db.Tokens().CreateToken(ctx, "replica", incidentlib.RoleAdmin, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	g := startFollower(t, late, ts.URL, func(c *replica.Config) { c.PageSize, c.Token = 7, secret })
	g.waitSeq(t, p.db.Incidents().Seq())
	checkReplicaTaxonomy(t, p, late, term, mergedAway)
	entries, err := late.Taxonomies().TaxonomyChangesAfter(ctx, 0, 100)
	if err != nil || len(entries) != 8 {
		t.Fatalf("the late replica's history: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		if e.Author != "boss" {
			t.Fatalf("entry %d's author %q, want boss", e.Number, e.Author)
		}
	}
}

// The taxonomy feed is public, but the entries' authors go only to an
// admin's token.
func TestTaxonomyFeedAuthors(t *testing.T) {
	p := newPrimary(t, 5)
	ts := httptest.NewServer(p.srv)
	t.Cleanup(ts.Close)
	ctx := context.Background()
	if _, err := p.db.Taxonomies().AddTerm(ctx, "boss", incidentlib.Term{Kind: incidentlib.KindDomain, Slug: "ledgers", Label: incidentlib.Text{En: "Ledgers"}}); err != nil {
		t.Fatal(err)
	}
	secret, _, err := p.db.Tokens().CreateToken(ctx, "replica", incidentlib.RoleAdmin, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(token, query string) (int, http.Header, []incidentlib.TaxonomyChange) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/taxonomy/changes"+query, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out []incidentlib.TaxonomyChange
		if resp.StatusCode == http.StatusOK {
			for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
				var e incidentlib.TaxonomyChange
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				out = append(out, e)
			}
		}
		return resp.StatusCode, resp.Header, out
	}
	code, h, anon := get("", "")
	if code != http.StatusOK || len(anon) != 1 || anon[0].Author != "" || anon[0].Subject != "term:domain:ledgers" || h.Get("Incidentlib-Seq") != fmt.Sprint(p.db.Incidents().Seq()) {
		t.Fatalf("anonymous: %d %v %+v", code, h, anon)
	}
	if code, _, admin := get(secret, "?after=0&limit=5"); code != http.StatusOK || len(admin) != 1 || admin[0].Author != "boss" {
		t.Fatalf("admin: %d %+v", code, admin)
	}
	for _, q := range []string{"?after=-1", "?limit=0", "?limit=1001", "?after=x"} {
		if code, _, _ := get("", q); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}
	if code, _, _ := get("il_notatoken", ""); code != http.StatusUnauthorized {
		t.Errorf("an unknown token: %d, want 401", code)
	}
}

// followFeed serves fs and starts a replica following it without long
// polls, at the change seq when it returns.
func followFeed(t *testing.T, fs *feedServer, seq uint64) (*storage.DB, *follower) {
	t.Helper()
	ts := httptest.NewServer(fs)
	t.Cleanup(ts.Close)
	db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { db.Close() })
	f := startFollower(t, db, ts.URL, func(c *replica.Config) { c.Wait = 0 })
	f.waitSeq(t, seq)
	return db, f
}

// taxEntry adds to the taxonomy feed entry n, by boss, carrying after
// (nil: none). The caller holds s.mu once the feed is served.
func (s *feedServer) taxEntry(n int, action incidentlib.TaxonomyAction, subject string, after any) {
	var b []byte
	if after != nil {
		b, _ = json.Marshal(after)
	}
	e := incidentlib.TaxonomyChange{Number: uint64(n), Seq: uint64(n), At: "2026-01-01T00:00:00Z", Author: "boss", Action: action, Subject: subject, After: b}
	line, _ := json.Marshal(e)
	s.tax = append(s.tax, append(line, '\n'))
}

// A hostile primary's taxonomy entries (a label with a control character,
// a slug that is not one, a subject that is not the term carried, an
// alias that is another term's slug, a line that is no JSON) are refused,
// counted and logged; the good ones around them are applied, and so is
// the record that uses a good new term; the replica goes on following.
func TestFollowerRefusesHostileTaxonomyEntries(t *testing.T) {
	goroutineGuard(t)
	fs := &feedServer{}
	entry := fs.taxEntry
	term := func(slug, label string, aliases ...string) incidentlib.Term {
		return incidentlib.Term{Kind: incidentlib.KindSymptom, Slug: slug, Label: incidentlib.Text{En: label}, Aliases: aliases}
	}
	entry(1, incidentlib.ActionAddTerm, "term:symptom:good-one", term("good-one", "Good one"))
	entry(2, incidentlib.ActionAddTerm, "term:symptom:bell", term("bell", "a bell\a rings"))
	entry(3, incidentlib.ActionAddTerm, "term:symptom:../x", term("../x", "Escape"))
	entry(4, incidentlib.ActionAddTerm, "term:symptom:innocent", term("other-one", "Other"))
	entry(5, incidentlib.ActionAddAliases, "term:symptom:good-two", term("good-two", "Good two", "good-one"))
	fs.tax = append(fs.tax, []byte(`{"n":6,"seq":6,"action":"ADD_TERM","after":{"kind":`+"\n"))
	entry(7, incidentlib.ActionAddTerm, "term:symptom:good-three", term("good-three", "Good three"))
	fs.add(t, hostileRecord("IL-0001", func(i *incidentlib.Incident) { i.Symptoms = []string{"good-one", "good-three"} }))
	fs.add(t, hostileRecord("IL-0002", func(i *incidentlib.Incident) { i.Symptoms = []string{"other-one"} }))
	db, f := followFeed(t, fs, 2)
	ctx := context.Background()
	incs, err := db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0001", "IL-0002"})
	if err != nil || incs[0] == nil || incs[1] != nil {
		t.Fatalf("stored: %v %v", incs, err)
	}
	tax := db.Taxonomies().Taxonomy()
	for slug, want := range map[string]bool{"good-one": true, "good-three": true, "bell": false, "../x": false, "other-one": false, "innocent": false, "good-two": false} {
		if (tax.Term(incidentlib.KindSymptom, slug) != nil) != want {
			t.Errorf("term %s on the replica: %v, want %v", slug, !want, want)
		}
	}
	st := f.Status()
	if st.TaxonomyEntry != 7 || st.TaxonomyApplied != 2 || st.TaxonomySkipped != 5 || st.Skipped != 1 {
		t.Fatalf("status %+v", st)
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "incidentlib_follow_taxonomy_skipped_total" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if got["structure"] != 5 {
		t.Fatalf("taxonomy entries skipped by rule %v, want structure 5", got)
	}
	if n, err := db.Taxonomies().AppliedTaxonomy(ctx); err != nil || n != 7 {
		t.Fatalf("applied taxonomy %d %v", n, err)
	}

	// It goes on following.
	fs.mu.Lock()
	entry(8, incidentlib.ActionAddTerm, "term:symptom:good-four", term("good-four", "Good four"))
	fs.mu.Unlock()
	fs.add(t, hostileRecord("IL-0003", func(i *incidentlib.Incident) { i.Symptoms = []string{"good-four"} }))
	f.waitSeq(t, 3)
	if incs, _ := db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0003"}); incs[0] == nil {
		t.Fatal("a later record with a later term was not applied")
	}
}
