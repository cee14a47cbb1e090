package replica_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
)

// TestReplicaSubscriptions: a replica's subscribers see the primary's
// writes, with the primary's sequences, so a client resumes on the
// replica with a seq it got from the primary.
func TestReplicaSubscriptions(t *testing.T) {
	p := newPrimary(t, 50)
	ps := httptest.NewServer(p.srv)
	t.Cleanup(ps.Close)
	db := openStore(t, filepath.Join(t.TempDir(), "replica.db"))
	t.Cleanup(func() { db.Close() })
	f := startFollower(t, db, ps.URL, nil)
	f.waitSeq(t, p.db.Incidents().Seq())
	rs, rsrv := testutil.ServerTest(t, db, server.Config{Primary: ps.URL}, testutil.ServerParts{})
	t.Cleanup(rsrv.StopSubscriptions)

	sub := func(since string) (*bufio.Scanner, context.CancelFunc) {
		vars := map[string]any{}
		if since != "" {
			vars["since"] = since
		}
		b, _ := json.Marshal(map[string]any{"query": `subscription($since: String) { incidentChanged(since: $since) { seq incidentId incident { title } } }`, "variables": vars})
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rs.URL+"/graphql", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %v", err, resp)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return bufio.NewScanner(resp.Body), cancel
	}
	type ev struct{ Seq, ID, Title string }
	next := func(sc *bufio.Scanner) ev {
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r struct {
					Data struct {
						IncidentChanged struct {
							Seq      string
							ID       string `json:"incidentId"`
							Incident struct{ Title string }
						}
					}
				}
				if err := json.Unmarshal([]byte(d), &r); err != nil {
					t.Fatalf("%s: %v", d, err)
				}
				c := r.Data.IncidentChanged
				return ev{c.Seq, c.ID, c.Incident.Title}
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return ev{}
	}
	write := func(id, title string) uint64 {
		recs, err := p.db.Incidents().FindIncidentsByIDs(context.Background(), []string{id})
		if err != nil || len(recs) != 1 {
			t.Fatal(err)
		}
		inc := *recs[0]
		inc.Title.En, inc.UpdatedAt, inc.Review = title, "", incidentlib.Review{}
		if _, err := p.db.Incidents().UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		return p.db.Incidents().Seq()
	}
	sc, cancel := sub("")
	s1 := write("IL-0003", "on the primary")
	if e := next(sc); e.Seq != strconv.FormatUint(s1, 10) || e.ID != "IL-0003" || e.Title != "on the primary" {
		t.Fatalf("%+v, want seq %d", e, s1)
	}
	cancel()
	// Two more writes while no one listens; resume on the replica after
	// the primary's seq s1.
	s2 := write("IL-0004", "second")
	s3 := write("IL-0005", "third")
	f.waitSeq(t, s3)
	sc, cancel = sub(strconv.FormatUint(s1, 10))
	defer cancel()
	for _, want := range []ev{{strconv.FormatUint(s2, 10), "IL-0004", "second"}, {strconv.FormatUint(s3, 10), "IL-0005", "third"}} {
		if e := next(sc); e != want {
			t.Fatalf("%+v, want %+v", e, want)
		}
	}
}
