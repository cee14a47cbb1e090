package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// nodeSamples gives, per type that implements Node, a query whose answer
// holds an id of that type (the first "id" in it). A new Node type without
// an entry fails TestGlobalIDs.
var nodeSamples = map[string]string{
	"Incident":     `{ incidents(first: 1) { nodes { id } } }`,
	"Organization": `{ organizations(first: 1) { nodes { id } } }`,
	"TaxonomyTerm": `{ taxonomy(kind: SEVERITY) { id } }`,
}

// TestGlobalIDs walks the served schema's object types (introspection of
// the real handler): a type with an id field implements Node, and the id
// of each Node type is one node(id:) resolves to an object of that type,
// so that a normalizing cache (relay-runtime's default getDataID,
// Apollo's) never merges two objects of different types. A type that is
// not a node says whose id it carries (IncidentChange.incidentId), as
// docs/graph.md says.
func TestGlobalIDs(t *testing.T) {
	ts, _ := testutil.ServerTest(t, testutil.OpenSeeded(t, storage.Options{}), server.Config{}, testutil.ServerParts{})
	post := func(t *testing.T, query string, vars map[string]any) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		resp, err := http.Post(ts.URL+"/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Data   map[string]any
			Errors []any
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Errors) > 0 || r.Data == nil {
			t.Fatalf("%s: %v %v", query, err, r.Errors)
		}
		return r.Data
	}

	data := post(t, `{ __schema { types { name kind interfaces { name } fields(includeDeprecated: true) { name } } } }`, nil)
	var nodes []string
	for _, ty := range data["__schema"].(map[string]any)["types"].([]any) {
		ty := ty.(map[string]any)
		name := ty["name"].(string)
		if ty["kind"] != "OBJECT" || name[0] == '_' {
			continue
		}
		hasID, isNode := false, false
		for _, f := range ty["fields"].([]any) {
			hasID = hasID || f.(map[string]any)["name"] == "id"
		}
		for _, i := range ty["interfaces"].([]any) {
			isNode = isNode || i.(map[string]any)["name"] == "Node"
		}
		switch {
		case isNode:
			nodes = append(nodes, name)
		case hasID:
			t.Errorf("%s has an id but does not implement Node: give it a global id that node(id:) resolves, or name whose id it is (incidentId)", name)
		}
	}
	sort.Strings(nodes)
	if len(nodes) < len(nodeSamples) {
		t.Fatalf("Node types %v, samples for %d", nodes, len(nodeSamples))
	}
	for _, name := range nodes {
		t.Run(name, func(t *testing.T) {
			q, ok := nodeSamples[name]
			if !ok {
				t.Fatalf("no sample query for the Node type %s in nodeSamples", name)
			}
			id, _ := firstID(post(t, q, nil))
			if id == "" {
				t.Fatalf("%s: no id", q)
			}
			got := post(t, `query($id: ID!) { node(id: $id) { __typename id } }`, map[string]any{"id": id})
			n, _ := got["node"].(map[string]any)
			if n == nil || n["__typename"] != name || n["id"] != id {
				t.Fatalf("node(id: %q) = %v, want the %s", id, got["node"], name)
			}
		})
	}
}

// firstID is the first value of an "id" key in v, depth first.
func firstID(v any) (string, bool) {
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["id"].(string); ok {
			return id, true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if id, ok := firstID(v[k]); ok {
				return id, true
			}
		}
	case []any:
		for _, e := range v {
			if id, ok := firstID(e); ok {
				return id, true
			}
		}
	}
	return "", false
}
