package replica_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/replica"
	"github.com/incidentlib/incidentlib/storage"
)

// historyOf is every incident's history as JSON, for comparison.
func historyOf(tb testing.TB, db *storage.DB, n int) string {
	tb.Helper()
	var out []any
	for i := 1; i <= n; i++ {
		id := incidentlib.FormatID(uint32(i))
		p, err := db.Versions().History(context.Background(), id, incidentlib.MaxPageSize, 0)
		if incidentlib.ErrorCode(err) == incidentlib.ENOTFOUND {
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, p.Versions)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// TestReplicaHoldsTheHistory: a follower with an admin token of its
// primary reads the history feed and holds the same history; after the
// primary compacts its history past the replica's position (410), it
// catches up from the current records and follows the history again.
func TestReplicaHoldsTheHistory(t *testing.T) {
	const n = 40
	p := newPrimary(t, n)
	secret, _, err := p.db.Tokens().CreateToken(context.Background(), "replica", incidentlib.RoleAdmin, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ts := newCountingServer(t, p.srv)
	as := func(name string, role incidentlib.Role) context.Context {
		return incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: name, Role: role})
	}
	kim, lee := as("kim", incidentlib.RoleEditor), as("lee", incidentlib.RoleReviewer)
	edit := func(i int, title string) {
		t.Helper()
		incs, err := p.db.Incidents().FindIncidentsByIDs(kim, []string{incidentlib.FormatID(uint32(i))})
		if err != nil || incs[0] == nil {
			t.Fatal(err)
		}
		c := *incs[0]
		c.Title.En = title
		c.Review = incidentlib.Review{}
		if _, err := p.db.Incidents().UpsertIncident(kim, &c, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 5; i++ {
		edit(i, fmt.Sprint("edited ", i))
		edit(i, fmt.Sprint("edited again ", i))
	}
	if _, err := p.db.Incidents().SubmitForReview(kim, "IL-0001", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionApprove, "fine", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.db.Incidents().DeleteIncident(kim, "IL-0002", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.db.Incidents().PurgeVersion(as("root", incidentlib.RoleAdmin), "IL-0003", 1, "takedown"); err != nil {
		t.Fatal(err)
	}
	rdb := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	defer rdb.Close()
	f := startFollower(t, rdb, ts.URL, func(c *replica.Config) { c.Token, c.PageSize = secret, 7 })
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, rdb)
	if a, b := historyOf(t, p.db, n), historyOf(t, rdb, n); a != b {
		t.Fatalf("the replica's history differs:\n%s\n%s", b, a)
	}
	f.stop()

	// Compaction past the replica's position: 410, then a catch-up.
	edit(4, "after the stop")
	if _, err := p.db.Maintenance().CompactHistory(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	edit(5, "after the compaction")
	f = startFollower(t, rdb, ts.URL, func(c *replica.Config) { c.Token = secret })
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, rdb)
	edit(6, "history again")
	f.waitSeq(t, p.db.Incidents().Seq())
	sameLibrary(t, p.db, rdb)
	h, err := rdb.Versions().History(context.Background(), "IL-0006", 5, 0)
	if err != nil || h.Versions[0].Author != "kim" || h.Versions[0].Action != incidentlib.ActionUpdate {
		t.Fatalf("%+v %v", h, err)
	}
}
