package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
)

// TestHistoryThroughTheAPI: through the real handler and a real store,
// the history records the token's name whatever the input says, a
// deleted incident is null but shown to editors and restored exactly,
// and a self-review is refused.
func TestHistoryThroughTheAPI(t *testing.T) {
	s := newIDServer(t, server.Config{ResponseCacheBytes: -1})
	alice := "Bearer " + apiToken(t, s.db, "alice", incidentlib.RoleEditor)
	bob := "Bearer " + apiToken(t, s.db, "bob", incidentlib.RoleReviewer)
	must := func(t *testing.T, auth, q string, vars map[string]any) map[string]json.RawMessage {
		t.Helper()
		r := s.send(t, auth, q, vars)
		if r.Status != 200 || len(r.Errors) > 0 || strings.Contains(string(r.Raw), `"code"`) {
			t.Fatalf("%s: %d %s", q, r.Status, r.Raw)
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &struct{ Data *map[string]json.RawMessage }{&out}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	const upsert = `mutation($i: IncidentInput!) { upsertIncident(input: $i) { incident { version reviewState } userErrors { code } } }`
	in := map[string]any{"id": "IL-0001", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "first"},
		"review": map[string]any{"writtenBy": "mallory"}}
	must(t, alice, upsert, map[string]any{"i": in})
	in["title"] = map[string]any{"en": "second"}
	in["expectedVersion"] = 1
	must(t, bob, upsert, map[string]any{"i": in})
	d := must(t, alice, `{ incident(id: "IL-0001") { version review { writtenBy } history { totalCount nodes { version action author { name role } changedFields } } } }`, nil)
	got := string(d["incident"])
	for _, want := range []string{`"version":2`, `"writtenBy":"alice"`, `"totalCount":2`,
		`{"version":2,"action":"UPDATE","author":{"name":"bob","role":"reviewer"},"changedFields":["title.en"]}`,
		`{"version":1,"action":"CREATE","author":{"name":"alice","role":"editor"},"changedFields":[]}`} {
		if !strings.Contains(got, want) {
			t.Fatalf("%s lacks %s", got, want)
		}
	}
	t.Run("SelfReviewRefused", func(t *testing.T) {
		must(t, alice, `mutation { submitForReview(id: "IL-0001", expectedVersion: 2) { userErrors { code } } }`, nil)
		r := s.send(t, bob, `mutation { reviewIncident(id: "IL-0001", decision: APPROVE) { userErrors { code } } }`, nil)
		if !strings.Contains(string(r.Raw), `"code":"SELF_REVIEW"`) {
			t.Fatalf("%s", r.Raw)
		}
	})
	v1 := must(t, alice, `{ incidentVersion(id: "IL-0001", version: 1) { record } }`, nil)
	must(t, alice, `mutation { deleteIncident(id: "IL-0001", expectedVersion: 3) { deletedId userErrors { code } } }`, nil)
	if d := must(t, "", `{ incident(id: "IL-0001") { id } }`, nil); string(d["incident"]) != "null" {
		t.Fatalf("a deleted incident reads %s", d["incident"])
	}
	del := must(t, alice, `{ deletedIncident(id: "IL-0001") { version deletedBy { name } record } }`, nil)
	if !strings.Contains(string(del["deletedIncident"]), `"deletedBy":{"name":"alice"}`) {
		t.Fatalf("%s", del["deletedIncident"])
	}
	r := s.send(t, alice, upsert, map[string]any{"i": map[string]any{"id": "IL-0001", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x"}}})
	if !strings.Contains(string(r.Raw), `"code":"CONFLICT"`) {
		t.Fatalf("upsert of a deleted id: %s", r.Raw)
	}
	must(t, alice, `mutation { restoreIncident(id: "IL-0001", version: 1, comment: "undo") { incident { version } userErrors { code } } }`, nil)
	now := must(t, alice, `{ incidentVersion(id: "IL-0001", version: 5) { action comment record } }`, nil)
	var a, b struct {
		Record map[string]json.RawMessage `json:"record"`
	}
	_ = json.Unmarshal(v1["incidentVersion"], &a)
	_ = json.Unmarshal(now["incidentVersion"], &b)
	for _, k := range []string{"version", "updated_at", "review_state"} {
		delete(a.Record, k)
		delete(b.Record, k)
	}
	x, _ := json.Marshal(a.Record)
	y, _ := json.Marshal(b.Record)
	if string(x) != string(y) || !strings.Contains(string(now["incidentVersion"]), `"action":"RESTORE","comment":"undo"`) {
		t.Fatalf("restored %s\nwant %s", y, x)
	}
}
