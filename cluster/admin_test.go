package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
)

func admin(name string) context.Context {
	return incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: name, Role: incidentlib.RoleAdmin})
}

// levelAll waits until every member applied the stream up to its last
// message.
func (c *testCluster) levelAll() uint64 {
	c.t.Helper()
	last, err := c.members[0].mb.Node.LastSeq(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	c.level(last)
	return last
}

// messages returns every write of the stream, in order.
func (c *testCluster) messages() [][]byte {
	c.t.Helper()
	last := c.levelAll()
	var out [][]byte
	for s := uint64(1); s <= last; s++ {
		data, err := c.members[0].mb.Node.GetMsg(context.Background(), s)
		if err != nil {
			c.t.Fatalf("message %d: %v", s, err)
		}
		out = append(out, data)
	}
	return out
}

// refusedEverywhere checks that the write the member m refused last is
// recorded as refused with code on every member.
func (c *testCluster) refusedEverywhere(m *member, code string) {
	c.t.Helper()
	seq := m.mb.Applier.Applied()
	c.level(seq)
	for _, o := range c.members {
		rej, err := o.db.ClusterLog().Rejections(context.Background())
		if err != nil {
			c.t.Fatal(err)
		}
		i := slices.IndexFunc(rej, func(r incidentlib.LogRejection) bool { return r.Seq == seq })
		if i < 0 || rej[i].Code != code {
			c.t.Errorf("%s did not record write %d as refused with %s: %v", o.name, seq, code, rej)
		}
	}
}

// The admin's writes go through the log: a token made on one node
// authenticates on every node, its secret never in the log; the
// taxonomy's and the organizations' changes reach every store, which
// stay byte-identical; refusals reach the client and are recorded alike.
func TestAdminWritesThroughTheLog(t *testing.T) {
	c := startCluster(t, 3)
	n1, n2, n3 := c.members[0], c.members[1], c.members[2]

	t.Run("Tokens", func(t *testing.T) {
		secret, info, err := n1.mb.Writer.CreateToken(admin("boss"), "ci-bot", incidentlib.RoleEditor, n1.mb.Writer.Now().AddDate(1, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if info.Name != "ci-bot" || info.Role != incidentlib.RoleEditor || !strings.HasPrefix(secret, incidentlib.TokenPrefix) {
			t.Fatalf("createToken answered %q %+v", secret, info)
		}
		c.level(n1.mb.Applier.Applied())
		var created []string
		for _, m := range c.members {
			id, err := m.db.Tokens().Authenticate(context.Background(), secret)
			if err != nil || id.Name != "ci-bot" || id.Role != incidentlib.RoleEditor {
				t.Errorf("%s: the token made through n1 authenticated as %+v, %v", m.name, id, err)
			}
			toks, err := m.db.Tokens().ListTokens(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, fmt.Sprint(toks[0].Created, toks[0].Expires))
		}
		if created[0] != created[1] || created[0] != created[2] {
			t.Errorf("the token's times differ between the nodes: %v", created)
		}
		// The log holds the hash, never the secret.
		sum := sha256.Sum256([]byte(secret))
		hashSeen := false
		for s, data := range c.messages() {
			if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte(strings.TrimPrefix(secret, incidentlib.TokenPrefix))) {
				t.Fatalf("message %d holds the token's secret: %s", s+1, data)
			}
			var w cluster.Write
			if err := json.Unmarshal(data, &w); err != nil {
				t.Fatal(err)
			}
			if w.Op == cluster.OpTokenCreate && bytes.Equal(w.TokenHash, sum[:]) {
				hashSeen = true
			}
		}
		if !hashSeen {
			t.Fatal("no token_create message carries the token's hash")
		}

		// A second active token of the name: refused on the client, and
		// recorded as refused alike on every node.
		if _, _, err := n2.mb.Writer.CreateToken(admin("boss"), "ci-bot", incidentlib.RoleAdmin, n2.mb.Writer.Now().AddDate(0, 1, 0)); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("a duplicate token name answered %v, want CONFLICT", err)
		}
		c.refusedEverywhere(n2, incidentlib.ECONFLICT)
		// Checked on the receiving node: nothing published.
		before := n2.mb.Applier.Applied()
		if _, _, err := n2.mb.Writer.CreateToken(admin("boss"), "admin", incidentlib.RoleEditor, n2.mb.Writer.Now().AddDate(0, 1, 0)); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("a reserved token name answered %v, want INVALID", err)
		}
		if last := c.levelAll(); last != before {
			t.Fatalf("a refused token was published (log at %d, was %d)", last, before)
		}

		// A retry of a creation (the same idempotency key) cannot show the
		// secret again: CONFLICT, and nothing more is written.
		// (Each request carries its own count of the key's writes.)
		keyed := func() context.Context { return cluster.WithIdempotencyKey(admin("boss"), "make-deploy-bot") }
		expires := n3.mb.Writer.Now().AddDate(0, 1, 0)
		if _, _, err := n3.mb.Writer.CreateToken(keyed(), "deploy-bot", incidentlib.RoleEditor, expires); err != nil {
			t.Fatal(err)
		}
		before = c.levelAll()
		if _, _, err := n3.mb.Writer.CreateToken(keyed(), "deploy-bot", incidentlib.RoleEditor, expires); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("a retried creation answered %v, want CONFLICT", err)
		}
		if last := c.levelAll(); last != before {
			t.Fatalf("a retried creation was applied again (log at %d, was %d)", last, before)
		}

		got, err := n3.mb.Writer.RevokeToken(admin("boss"), "ci-bot")
		if err != nil || got.Revoked.IsZero() {
			t.Fatalf("revokeToken answered %+v, %v", got, err)
		}
		c.level(n3.mb.Applier.Applied())
		for _, m := range c.members {
			if _, err := m.db.Tokens().Authenticate(context.Background(), secret); incidentlib.ErrorCode(err) != incidentlib.EUNAUTHENTICATED {
				t.Errorf("%s: the revoked token answered %v, want UNAUTHENTICATED", m.name, err)
			}
		}
		if _, err := n1.mb.Writer.RevokeToken(admin("boss"), "ci-bot"); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("revoking twice answered %v, want CONFLICT", err)
		}
		c.refusedEverywhere(n1, incidentlib.ECONFLICT)
	})

	t.Run("Taxonomy", func(t *testing.T) {
		w := n2.mb.Writer
		term := incidentlib.Term{Kind: incidentlib.KindComponent, Slug: "edge-cache", Label: incidentlib.Text{En: "Edge cache"}}
		if _, err := w.AddTerm(admin("tax"), "tax", term); err != nil {
			t.Fatal(err)
		}
		// Another node's writer checks records with the new term at once.
		c.level(n2.mb.Applier.Applied())
		inc := incidents(t, 1, 21)[0]
		inc.Components = []string{"edge-cache"}
		if _, err := n1.mb.Writer.UpsertIncident(editor("ed"), inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatalf("an incident with the term added through n2, written through n1: %v", err)
		}
		if _, err := w.AddTermAliases(admin("tax"), "tax", incidentlib.KindComponent, "edge-cache", []string{"cdn-cache"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.UpdateTerm(admin("tax"), "tax", incidentlib.KindComponent, "edge-cache", incidentlib.TermUpdate{Description: &incidentlib.Text{En: "Caches at the edge."}}); err != nil {
			t.Fatal(err)
		}
		got, err := w.DeprecateTerm(admin("tax"), "tax", incidentlib.KindComponent, "edge-cache", true)
		if err != nil || !got.Deprecated {
			t.Fatalf("deprecateTerm answered %+v, %v", got, err)
		}
		if _, err := w.DeprecateTerm(admin("tax"), "tax", incidentlib.KindComponent, "no-such-part", true); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
			t.Fatalf("deprecating an unknown term answered %v, want NOT_FOUND", err)
		}
		c.refusedEverywhere(n2, incidentlib.ENOTFOUND)
		var histories []string
		for _, m := range c.members {
			tt := m.db.Taxonomies().Taxonomy().Term(incidentlib.KindComponent, "edge-cache")
			if tt == nil || !tt.Deprecated || !slices.Contains(tt.Aliases, "cdn-cache") || tt.Description.En != "Caches at the edge." {
				t.Errorf("%s holds the term as %+v", m.name, tt)
			}
			first := 100
			page, err := m.db.Taxonomies().TaxonomyHistory(context.Background(), incidentlib.PageArgs{First: &first})
			if err != nil {
				t.Fatal(err)
			}
			if page.TotalCount != 4 {
				t.Errorf("%s's taxonomy history has %d entries, want 4", m.name, page.TotalCount)
			}
			b, _ := json.Marshal(page.Changes)
			histories = append(histories, string(b))
		}
		if histories[0] != histories[1] || histories[0] != histories[2] {
			t.Errorf("the taxonomy histories differ:\n%s\n%s\n%s", histories[0], histories[1], histories[2])
		}
		c.same()
	})

	t.Run("Organizations", func(t *testing.T) {
		incs := incidents(t, 8, 22)
		for i, inc := range incs {
			m := c.members[i%3]
			if _, err := m.mb.Writer.UpsertIncident(editor(m.name), inc, incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		from, into := incs[0].OrgSlug, ""
		for _, inc := range incs {
			if inc.OrgSlug != from {
				into = inc.OrgSlug
				break
			}
		}
		if into == "" {
			t.Fatal("the generated incidents name one organization")
		}
		w := n3.mb.Writer
		// Two admin writes of one request (one idempotency key) are two
		// writes; the request retried writes neither again.
		var after uint64
		for try := range 2 {
			req := cluster.WithIdempotencyKey(admin("orgs"), "two-desks")
			for _, o := range []incidentlib.Organization{{Slug: "new-desk", Name: "New Desk"}, {Slug: "other-desk", Name: "Other Desk"}} {
				if got, err := w.AddOrganization(req, "orgs", o); err != nil || got.Slug != o.Slug {
					t.Fatalf("addOrganization %s answered %+v, %v", o.Slug, got, err)
				}
			}
			if last := c.levelAll(); try == 0 {
				after = last
			} else if last != after {
				t.Fatalf("the retried request wrote again (log at %d, was %d)", last, after)
			}
		}
		for _, m := range c.members {
			got, err := m.db.Taxonomies().FindOrganizationsBySlugs(context.Background(), []string{"new-desk", "other-desk"})
			if err != nil || len(got) != 2 || got[0] == nil || got[1] == nil {
				t.Errorf("%s holds the request's organizations as %v, %v", m.name, got, err)
			}
		}
		o, res, err := w.RenameOrganization(admin("orgs"), "orgs", into, "Renamed Org")
		if err != nil || o.Name != "Renamed Org" || len(res.Incidents) == 0 {
			t.Fatalf("renameOrganization answered %+v %+v, %v", o, res, err)
		}
		merged, err := w.MergeOrganizations(admin("orgs"), "orgs", from, into)
		if err != nil || merged.Into.Slug != into || len(merged.Incidents) == 0 {
			t.Fatalf("mergeOrganizations answered %+v, %v", merged, err)
		}
		if _, err := w.MergeOrganizations(admin("orgs"), "orgs", from, into); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
			t.Fatalf("merging a merged organization again answered %v, want NOT_FOUND", err)
		}
		c.refusedEverywhere(n3, incidentlib.ENOTFOUND)
		c.levelAll()
		for _, m := range c.members {
			got, err := m.db.Incidents().FindIncidentsByIDs(context.Background(), merged.Incidents)
			if err != nil {
				t.Fatal(err)
			}
			for _, inc := range got {
				if inc.OrgSlug != into || inc.Org != "Renamed Org" {
					t.Errorf("%s holds %s with organization %q %q after the merge", m.name, inc.ID, inc.OrgSlug, inc.Org)
				}
			}
		}
		c.same()
	})
}
