package server_test

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/restapi"
)

const purgedText = "QZX-TAKEDOWN-9902-libel"

// holdsText reports whether a bbolt file holds text in its raw bytes (free
// pages included) or in a stored value once decompressed (superseded
// records are DEFLATEd, 'z' first).
func holdsText(tb testing.TB, path, text string) bool {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if bytes.Contains(raw, []byte(text)) {
		return true
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	found := false
	var walk func(b *bolt.Bucket)
	walk = func(b *bolt.Bucket) {
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(b.Bucket(k))
			} else if len(v) > 1 && v[0] == 'z' {
				d, err := io.ReadAll(flate.NewReader(bytes.NewReader(v[1:])))
				found = found || (err == nil && bytes.Contains(d, []byte(text)))
			}
			return nil
		})
	}
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { walk(b); return nil })
	})
	return found
}

// TestPurgeThroughTheAPI: through the real handler (response cache on)
// and a real store, purgeVersion of v1 removes its text from v1 and from
// the SUBMIT and REQUEST_CHANGES versions that carried it: from history,
// incidentVersion, the history feed (/api/v1/changes with an admin token),
// a subscription resumed from the start, and GET /admin/backup. The live
// content is refused and a second purge writes nothing.
func TestPurgeThroughTheAPI(t *testing.T) {
	s := newIDServer(t, server.Config{})
	alice := "Bearer " + apiToken(t, s.db, "alice", incidentlib.RoleEditor)
	bob := "Bearer " + apiToken(t, s.db, "bob", incidentlib.RoleReviewer)
	adminSecret := apiToken(t, s.db, "root", incidentlib.RoleAdmin)
	admin := "Bearer " + adminSecret
	must := func(t *testing.T, auth, q string, vars map[string]any) string {
		t.Helper()
		r := s.send(t, auth, q, vars)
		if r.Status != 200 || len(r.Errors) > 0 || strings.Contains(string(r.Raw), `"code"`) {
			t.Fatalf("%s: %d %s", q, r.Status, r.Raw)
		}
		return string(r.Raw)
	}
	const upsert = `mutation($i: IncidentInput!) { upsertIncident(input: $i) { incident { version } userErrors { code } } }`
	long := strings.Repeat(purgedText+" said ", 600) // over several pages
	in := map[string]any{"id": "IL-0901", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "outage " + purgedText},
		"summary": map[string]any{"en": long}, "lessons": map[string]any{"en": long}}
	must(t, alice, upsert, map[string]any{"i": in})
	must(t, alice, `mutation { submitForReview(id: "IL-0901") { userErrors { code } } }`, nil)
	must(t, bob, `mutation { reviewIncident(id: "IL-0901", decision: REQUEST_CHANGES, comment: "sources") { userErrors { code } } }`, nil)
	const reads = `{ incident(id: "IL-0901") { history(first: 50) { nodes { version action record } } }
		v1: incidentVersion(id: "IL-0901", version: 1) { record } v2: incidentVersion(id: "IL-0901", version: 2) { record }
		v3: incidentVersion(id: "IL-0901", version: 3) { record } v4: incidentVersion(id: "IL-0901", version: 4) { record } }`

	t.Run("ErrLiveContent", func(t *testing.T) {
		seq := s.db.Incidents().Seq()
		for _, v := range []int{1, 2, 3} {
			r := s.send(t, admin, `mutation($v: Int!) { purgeVersion(id: "IL-0901", version: $v, reason: "takedown") { entry { version } userErrors { code } } }`, map[string]any{"v": v})
			if !strings.Contains(string(r.Raw), `"code":"INVALID"`) || s.db.Incidents().Seq() != seq {
				t.Fatalf("purge of version %d, the live content: %s", v, r.Raw)
			}
		}
	})

	in["title"] = map[string]any{"en": "outage (text removed)"}
	in["summary"], in["lessons"] = map[string]any{"en": "removed"}, map[string]any{"en": "removed"}
	in["expectedVersion"] = 3
	must(t, alice, upsert, map[string]any{"i": in})
	if got := must(t, admin, reads, nil); !strings.Contains(got, purgedText) { // and in the response cache
		t.Fatal("the text is not there to purge")
	}
	got := must(t, admin, `mutation { purgeVersion(id: "IL-0901", version: 1, reason: "takedown") { entry { version action } userErrors { code } } }`, nil)
	if !strings.Contains(got, `"entry":{"version":5,"action":"PURGE"}`) {
		t.Fatalf("%s", got)
	}
	if got := must(t, admin, reads, nil); strings.Contains(got, purgedText) {
		t.Fatalf("history or incidentVersion still serve the purged text: %s", got)
	}

	t.Run("HistoryFeed", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/changes?since=0&limit=1000", nil)
		req.Header.Set("Authorization", admin)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get(restapi.FeedHeader) != "history" || !bytes.Contains(b, []byte(`"id":"IL-0901"`)) {
			t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get(restapi.FeedHeader), b)
		}
		if bytes.Contains(b, []byte(purgedText)) {
			t.Fatal("the history feed serves the purged text")
		}
	})

	t.Run("Subscription", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		q, _ := json.Marshal(map[string]any{"query": `subscription { incidentChanged(since: "0") { seq incidentId incident { title summary
			history(first: 50) { nodes { record } } } } }`})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/graphql", bytes.NewReader(q))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", admin)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() { // the resumed changes: each incident's latest, IL-0901 among them
			line := sc.Text()
			if strings.Contains(line, purgedText) {
				t.Fatal("a subscription serves the purged text")
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"id":"IL-0901"`) {
				if !strings.Contains(line, `"history"`) {
					t.Fatalf("the event has no history: %s", line)
				}
				return
			}
		}
		t.Fatalf("the stream ended before IL-0901: %v", sc.Err())
	})

	t.Run("Backup", func(t *testing.T) {
		if !holdsText(t, s.db.Path(), purgedText) {
			t.Fatal("the live file holds the purged text in no free page: the backup below proves nothing")
		}
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/admin/backup", nil)
		req.Header.Set("Authorization", admin)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		path := filepath.Join(t.TempDir(), "backup.db")
		f, _ := os.Create(path)
		if _, err := io.Copy(f, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		f.Close()
		if holdsText(t, path, purgedText) {
			t.Fatal("the backup holds the purged text")
		}
	})

	t.Run("Twice", func(t *testing.T) {
		seq := s.db.Incidents().Seq()
		for _, v := range []int{1, 2, 3} {
			got := must(t, admin, `mutation($v: Int!) { purgeVersion(id: "IL-0901", version: $v, reason: "again") { entry { version action } userErrors { code } } }`, map[string]any{"v": v})
			if !strings.Contains(got, `"entry":{"version":5,"action":"PURGE"}`) || s.db.Incidents().Seq() != seq {
				t.Fatalf("a second purge of version %d: %s", v, got)
			}
		}
	})
}
