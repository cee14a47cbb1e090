package storage_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// logSeq returns the log position the store applied up to.
func logSeq(t *testing.T, db *storage.DB) uint64 {
	t.Helper()
	seq, _, err := db.ClusterLog().LogSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// The admin's writes under a log position, as a cluster node applies
// them: the time is the position's (never the store's clock), the
// position is stored with the write, also when it changes nothing, and a
// position applied already is refused.
func TestAdminWritesUnderLogPosition(t *testing.T) {
	db := MustOpenDB(t)
	if err := db.ClusterLog().MarkLogged(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Far from the store's clock, so a time read from the clock shows.
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 890000000, time.UTC)
	at := func(seq uint64, d time.Duration) context.Context {
		return incidentlib.WithLogPosition(context.Background(), incidentlib.LogPosition{Seq: seq, At: t0.Add(d)})
	}
	hash := sha256.Sum256([]byte("il_not-a-real-secret"))

	t.Run("Tokens", func(t *testing.T) {
		// An expiry after the clock but before the log's time is in the past.
		if _, err := db.Tokens().CreateTokenHash(at(1, 0), "bot", incidentlib.RoleEditor, hash[:], t0.Add(-time.Hour)); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("an expiry before the log's time answered %v, want INVALID", err)
		}
		info, err := db.Tokens().CreateTokenHash(at(1, 0), "bot", incidentlib.RoleEditor, hash[:], t0.Add(48*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if !info.Created.Equal(t0.Truncate(time.Second)) || logSeq(t, db) != 1 {
			t.Fatalf("created %v at log position %d, want %v at 1", info.Created, logSeq(t, db), t0.Truncate(time.Second))
		}
		if _, err := db.Tokens().CreateTokenHash(at(1, 0), "bot2", incidentlib.RoleEditor, hash[:], time.Time{}); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("a position applied already answered %v, want CONFLICT", err)
		}
		if _, err := db.Tokens().CreateTokenHash(at(2, 0), "bot3", incidentlib.RoleEditor, hash[:16], time.Time{}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("a short hash answered %v, want INVALID", err)
		}
		rev, err := db.Tokens().RevokeToken(at(2, time.Minute), "bot")
		if err != nil {
			t.Fatal(err)
		}
		if !rev.Revoked.Equal(t0.Add(time.Minute).Truncate(time.Second)) || logSeq(t, db) != 2 {
			t.Fatalf("revoked %v at log position %d", rev.Revoked, logSeq(t, db))
		}
		// The name is free again at the log's time.
		if _, err := db.Tokens().CreateTokenHash(at(3, 2*time.Minute), "bot", incidentlib.RoleAdmin, hash[:], time.Time{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Taxonomy", func(t *testing.T) {
		term := incidentlib.Term{Kind: incidentlib.KindComponent, Slug: "edge-cache", Label: incidentlib.Text{En: "Edge cache"}}
		if _, err := db.Taxonomies().AddTerm(at(4, time.Hour), "tax", term); err != nil {
			t.Fatal(err)
		}
		if logSeq(t, db) != 4 {
			t.Fatalf("log position %d after the term, want 4", logSeq(t, db))
		}
		first := 1
		page, err := db.Taxonomies().TaxonomyHistory(context.Background(), incidentlib.PageArgs{First: &first})
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(time.Hour).Format(time.RFC3339Nano); page.Changes[0].At != want {
			b, _ := json.Marshal(page.Changes[0])
			t.Fatalf("the history entry is %s, want at %s", b, want)
		}
		// A change that changes nothing still moves the position.
		if _, err := db.Taxonomies().DeprecateTerm(at(5, time.Hour), "tax", incidentlib.KindComponent, "edge-cache", false); err != nil {
			t.Fatal(err)
		}
		if logSeq(t, db) != 5 {
			t.Fatalf("log position %d after a change of nothing, want 5", logSeq(t, db))
		}
		if _, err := db.Taxonomies().AddTerm(at(5, time.Hour), "tax", incidentlib.Term{Kind: incidentlib.KindComponent, Slug: "other", Label: incidentlib.Text{En: "Other"}}); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("a position applied already answered %v, want CONFLICT", err)
		}
		if db.Taxonomies().Taxonomy().Term(incidentlib.KindComponent, "other") != nil {
			t.Fatal("a refused position wrote its term")
		}
	})

	t.Run("RenameAfterALaterWrite", func(t *testing.T) {
		// An incident last written at a time after the rename's (another
		// node's clock ahead): its updated_at still grows.
		inc := corpus(t, 1, 31)[0]
		inc.UpdatedAt = t0.Add(24 * time.Hour).Format(time.RFC3339Nano)
		if _, err := db.Incidents().ImportIncidents(at(6, 24*time.Hour), []*incidentlib.Incident{inc}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.Taxonomies().RenameOrganization(at(7, 2*time.Hour), "orgs", inc.OrgSlug, "A New Name"); err != nil {
			t.Fatal(err)
		}
		got, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{inc.ID})
		if err != nil || len(got) != 1 {
			t.Fatal(got, err)
		}
		if want := t0.Add(24*time.Hour + time.Microsecond).Format(time.RFC3339Nano); got[0].UpdatedAt != want || got[0].Org != "A New Name" {
			t.Fatalf("renamed: updated_at %s org %q, want %s", got[0].UpdatedAt, got[0].Org, want)
		}
		mustCheck(t, db)
	})
}
