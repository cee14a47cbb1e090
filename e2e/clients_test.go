package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The client set-ups of docs/clients.md, each run with the real library
// (the versions pinned in package-lock.json) against the real server.

// TestApolloClient: possibleTypes generated from GET /schema.graphql make
// fragments on Node match; fetchMore appends page 2 to page 1 for `nodes`
// (the type policy of docs/clients.md) and for `edges`
// (relayStylePagination) instead of replacing it.
func TestApolloClient(t *testing.T) {
	node := nodeAudit(t)
	ts, _, _ := liveServer(t)
	var out struct {
		PossibleTypes struct{ Node []string }
		Nodes         []struct {
			Typename    string `json:"__typename"`
			ID          string
			Title, Name string
		}
		Identified                             []*string
		Page1, Page2, AfterFetchMore           []string
		OrgPage1, OrgPage2, OrgsAfterFetchMore []string
	}
	b := runNode(t, "", nil, node, "apollo.mjs", ts.URL)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %.500s", err, b)
	}
	if len(out.PossibleTypes.Node) != 3 {
		t.Errorf("possibleTypes.Node %v", out.PossibleTypes.Node)
	}
	wantTypes := []string{"Incident", "Organization", "TaxonomyTerm"}
	if len(out.Nodes) != 3 {
		t.Fatalf("nodes %+v", out.Nodes)
	}
	for i, n := range out.Nodes {
		// The id comes from the fragment on Node: without possibleTypes
		// Apollo leaves it out of the result.
		if n.Typename != wantTypes[i] || n.ID == "" || out.Identified[i] == nil {
			t.Errorf("nodes[%d] %+v, cache id %v", i, n, out.Identified[i])
		}
	}
	if out.Nodes[0].Title == "" || out.Nodes[1].Name == "" {
		t.Errorf("type fragments: %+v", out.Nodes)
	}
	// The cache holds page 1 then page 2, each as the server sent it.
	appended := func(what string, page1, page2, after []string) {
		t.Helper()
		if len(page1) == 0 || len(page2) == 0 || !slices.Equal(after, append(slices.Clone(page1), page2...)) {
			t.Errorf("%s: page 1 %v, page 2 %v, after fetchMore %v", what, page1, page2, after)
		}
		for _, id := range page2 {
			if slices.Contains(page1, id) {
				t.Errorf("%s: page 2 repeats %s", what, id)
			}
		}
	}
	appended("nodes", out.Page1, out.Page2, out.AfterFetchMore)
	appended("edges", out.OrgPage1, out.OrgPage2, out.OrgsAfterFetchMore)
}

// TestUrql: a query and a subscription (over graphql-sse) with urql.
func TestUrql(t *testing.T) {
	node := nodeAudit(t)
	ts, db, _ := liveServer(t)
	const id = "IL-0214"
	var out struct {
		Query struct {
			Data *struct {
				Incident *struct {
					ID, Title    string
					Organization struct{ Name string }
				}
			}
			Error *string
		}
		Event struct {
			Action, IncidentID string
			Incident           *struct{ ID, Title string }
		}
	}
	b := runNode(t, "", func(i int) { retitle(t, db, id, fmt.Sprintf("urql %d", i)) }, node, "urql.mjs", ts.URL, id)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %.500s", err, b)
	}
	if q := out.Query; q.Error != nil || q.Data == nil || q.Data.Incident == nil || q.Data.Incident.ID != id || q.Data.Incident.Organization.Name == "" {
		t.Errorf("query: %s", b)
	}
	if e := out.Event; e.IncidentID != id || e.Action != "UPDATE" || e.Incident == nil || !strings.HasPrefix(e.Incident.Title, "urql ") {
		t.Errorf("event: %+v", e)
	}
}

// TestCodegen: graphql-codegen's client preset generates types from GET
// /schema.graphql as served for the README's queries (codegen/readme.ts),
// and tsc --noEmit (strict) accepts them and the code that reads them.
func TestCodegen(t *testing.T) {
	codegen, tsc := npmTool(t, "graphql-codegen"), npmTool(t, "tsc")
	ts, _, _ := liveServer(t)
	dir := t.TempDir()
	servedSchema(t, ts.URL, dir)
	if err := os.Mkdir(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, filepath.Join(dir, "src"), "codegen/readme.ts")
	// The generated code imports @graphql-typed-document-node/core.
	modules, _ := filepath.Abs("node_modules")
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"codegen.yml": "schema: ./schema.graphql\ndocuments: ['src/**/*.ts', '!src/gql/**/*']\ngenerates:\n  ./src/gql/:\n    preset: client\n",
		"tsconfig.json": `{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "esnext",
  "moduleResolution": "bundler", "skipLibCheck": true}, "include": ["src"]}`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runNode(t, dir, nil, codegen, "--config", "codegen.yml")
	gen, err := os.ReadFile(filepath.Join(dir, "src", "gql", "graphql.ts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"ListPageQuery", "IncidentPageQuery", "TaxonomyQuery", "ChangesSubscription"} {
		if !strings.Contains(string(gen), "export type "+typ+" ") {
			t.Errorf("no %s in the generated types", typ)
		}
	}
	runNode(t, dir, nil, tsc, "-p", ".")
}
