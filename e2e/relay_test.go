package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRelay compiles relay/relayOps.js, operations in the shape of the
// README's examples and a subscription, with relay-compiler (the version
// pinned in package-lock.json) against GET /schema.graphql of the real
// server as it comes, then runs them with relay-runtime (relay.mjs): one
// store with the default getDataID, where a subscription event about an
// incident must update the incident's record and not collide with it
// (docs/graph.md, "Global ids").
func TestRelay(t *testing.T) {
	node := nodeAudit(t)
	compiler := npmTool(t, "relay-compiler")
	ts, db, _ := liveServer(t)

	dir := t.TempDir()
	servedSchema(t, ts.URL, dir)
	for _, d := range []string{"src", "__generated__"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFiles(t, filepath.Join(dir, "src"), "relay/relayOps.js")
	cfg := `{"src": "./src", "schema": "./schema.graphql", "language": "javascript", "artifactDirectory": "./__generated__"}`
	if err := os.WriteFile(filepath.Join(dir, "relay.config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	runNode(t, dir, nil, compiler)
	gen := filepath.Join(dir, "__generated__")
	for _, op := range []string{"relayOpsListPageQuery", "relayOpsIncidentPageQuery", "relayOpsTaxonomyQuery", "relayOpsChangesSubscription"} {
		if _, err := os.Stat(filepath.Join(gen, op+".graphql.js")); err != nil {
			t.Fatalf("relay-compiler wrote no %s: %v", op, err)
		}
	}

	const id = "IL-0213"
	write := func(i int) { retitle(t, db, id, fmt.Sprintf("relay %d %d", i, time.Now().UnixNano())) }
	var out struct {
		Queries struct {
			ListPage struct {
				Incidents struct {
					TotalCount int
					Nodes      []struct{ ID, Title string }
					Facets     []struct{ Kind string }
				}
			}
			IncidentPage struct {
				Incident *struct {
					ID, Title string
					Similar   []json.RawMessage
				}
			}
			Taxonomy struct {
				Taxonomy      []struct{ Slug string }
				Organizations struct{ TotalCount int }
				Nodes         []*struct{ ID string }
			}
		}
		Event struct {
			Action, IncidentID string
			Incident           *struct{ ID, Title string }
		}
		Record *struct {
			Typename  string `json:"__typename"`
			ID, Title string
		}
		Warnings []string
	}
	b := runNode(t, "", write, node, "relay.mjs", ts.URL, gen, id)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %.500s", err, b)
	}
	q := out.Queries
	if q.ListPage.Incidents.TotalCount == 0 || len(q.ListPage.Incidents.Nodes) == 0 || len(q.ListPage.Incidents.Facets) != 2 {
		t.Errorf("list page: %+v", q.ListPage)
	}
	if q.IncidentPage.Incident == nil || q.IncidentPage.Incident.ID != id || len(q.IncidentPage.Incident.Similar) == 0 {
		t.Errorf("incident page: %+v", q.IncidentPage)
	}
	if len(q.Taxonomy.Taxonomy) == 0 || q.Taxonomy.Organizations.TotalCount == 0 || len(q.Taxonomy.Nodes) != 3 {
		t.Errorf("taxonomy: %+v", q.Taxonomy)
	}
	for i, n := range q.Taxonomy.Nodes {
		if n == nil || n.ID == "" {
			t.Errorf("nodes[%d] is null", i)
		}
	}
	e := out.Event
	if e.IncidentID != id || e.Action != "UPDATE" || e.Incident == nil || !strings.HasPrefix(e.Incident.Title, "relay ") {
		t.Errorf("event: %+v", e)
	}
	// The event's incident is the incident's record: one record, an
	// Incident, with the title the event brought.
	if r := out.Record; r == nil || r.Typename != "Incident" || r.ID != id || e.Incident == nil || r.Title != e.Incident.Title {
		t.Errorf("the store's %s after the event: %+v", id, out.Record)
	}
	for _, w := range out.Warnings {
		t.Errorf("relay-runtime: %s", w)
	}
}
