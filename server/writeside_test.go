package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// Every mutation of the schema writes through the server's one write side
// (incidentlib.Writer), never through its reads. The server is assembled
// over two stores holding the same library: the reads are a cluster
// member's store, which refuses any write without a log position (an
// INTERNAL error), and the writer is a store alone. Each mutation must
// answer without an error, change the writer's store and leave the
// reads' store as it was. The mutations are read from the schema: one
// without a case here fails the test.
func TestEveryMutationWritesThroughTheWriter(t *testing.T) {
	const token = "write-side-test-admin-token-0123"
	ctx := context.Background()
	incs := seedIncidents(t)
	reads := testutil.ServerStore(t, incs, storage.Options{})
	writes := testutil.ServerStore(t, incs, storage.Options{})
	if err := reads.ClusterLog().MarkLogged(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	srv, _, err := server.Assemble(reads.Reads(), writes.Writer(), nil, nil, m, server.Config{AdminToken: token, BackupDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetReady(true)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	// A history to import, of an incident the library does not hold.
	hinc, err := gen.Generate(gen.Options{Count: 1, Seed: 3, FirstID: 9100, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	src := testutil.ServerStore(t, hinc, storage.Options{})
	var hist bytes.Buffer
	if err := src.Versions().ExportHistory(ctx, &hist); err != nil {
		t.Fatal(err)
	}
	hin, err := model.HistoryInputOf(bytes.TrimSpace(hist.Bytes()))
	if err != nil {
		t.Fatal(err)
	}

	x, y, z := incs[0].ID, incs[1].ID, incs[2].ID
	type mutation struct {
		field, query string
		vars         map[string]any
	}
	// In order: each may need the state the ones before it left.
	cases := []mutation{
		{"upsertIncident", `mutation { upsertIncident(input: {id: "IL-9001", org: "Writer Test", orgSlug: "writer-test", title: {en: "Written through the writer"}}) { userErrors { code } } }`, nil},
		{"importIncidents", `mutation { importIncidents(records: [{id: "IL-9002", org: "Writer Test", orgSlug: "writer-test", title: {en: "Imported through the writer"}}]) { userErrors { code } } }`, nil},
		{"importIncidents", `mutation($h: [HistoryImportInput!]) { importIncidents(histories: $h) { userErrors { code } } }`, map[string]any{"h": []any{hin}}},
		{"submitForReview", `mutation($id: ID!) { submitForReview(id: $id) { userErrors { code } } }`, map[string]any{"id": x}},
		{"reviewIncident", `mutation($id: ID!) { reviewIncident(id: $id, decision: REQUEST_CHANGES, comment: "sources") { userErrors { code } } }`, map[string]any{"id": x}},
		{"deleteIncident", `mutation($id: ID!) { deleteIncident(id: $id) { userErrors { code } } }`, map[string]any{"id": y}},
		{"restoreIncident", `mutation($id: ID!) { restoreIncident(id: $id, version: 1) { userErrors { code } } }`, map[string]any{"id": y}},
		// Content other than version 1's, which the purge then may remove.
		{"upsertIncident", `mutation($id: ID!) { upsertIncident(input: {id: $id, org: "Writer Test", orgSlug: "writer-test", title: {en: "Edited before the purge"}}) { userErrors { code } } }`, map[string]any{"id": y}},
		{"purgeVersion", `mutation($id: ID!) { purgeVersion(id: $id, version: 1, reason: "a takedown") { userErrors { code } } }`, map[string]any{"id": y}},
		{"withdrawIncident", `mutation($id: ID!) { withdrawIncident(id: $id, reason: "a hoax") { userErrors { code } } }`, map[string]any{"id": z}},
		{"createToken", `mutation { createToken(name: "bot", role: EDITOR) { userErrors { code } } }`, nil},
		{"revokeToken", `mutation { revokeToken(name: "bot") { userErrors { code } } }`, nil},
		{"addTerm", `mutation { addTerm(input: {kind: COMPONENT, slug: "writer-side", label: {en: "Writer side"}}) { userErrors { code } } }`, nil},
		{"updateTerm", `mutation { updateTerm(kind: COMPONENT, slug: "writer-side", label: {en: "The writer side"}) { userErrors { code } } }`, nil},
		{"addTermAliases", `mutation { addTermAliases(kind: COMPONENT, slug: "writer-side", aliases: ["write-side"]) { userErrors { code } } }`, nil},
		{"deprecateTerm", `mutation { deprecateTerm(kind: COMPONENT, slug: "writer-side") { userErrors { code } } }`, nil},
		{"addOrganization", `mutation { addOrganization(slug: "writer-org", name: "Writer Org") { userErrors { code } } }`, nil},
		{"renameOrganization", `mutation { renameOrganization(slug: "writer-org", name: "Writer Organization") { userErrors { code } } }`, nil},
		{"mergeOrganizations", `mutation($into: String!) { mergeOrganizations(from: "writer-org", into: $into) { userErrors { code } } }`, map[string]any{"into": incs[0].OrgSlug}},
		{"addGlossaryEntry", `mutation { addGlossaryEntry(input: {en: ["write side"], ko: ["쓰기 쪽"]}) { userErrors { code } } }`, nil},
		{"updateGlossaryEntry", `mutation { updateGlossaryEntry(key: "write side", input: {en: ["write side"], ko: ["쓰기 측"], note: "changed"}) { userErrors { code } } }`, nil},
		{"removeGlossaryEntry", `mutation { removeGlossaryEntry(key: "write side") { userErrors { code } } }`, nil},
	}

	readsBefore := fingerprint(t, reads)
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.field] = true
		before := fingerprint(t, writes)
		status, raw := postAdmin(t, ts.URL, token, c.query, c.vars)
		var out struct {
			Data   map[string]struct{ UserErrors []any } `json:"data"`
			Errors []any                                 `json:"errors"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || status != http.StatusOK || len(out.Errors) > 0 {
			t.Fatalf("%s answered %d %s", c.field, status, raw)
		}
		if ues := out.Data[c.field].UserErrors; len(ues) > 0 {
			t.Fatalf("%s answered user errors %s", c.field, raw)
		}
		if fingerprint(t, writes) == before {
			t.Errorf("%s did not change the writer's store", c.field)
		}
	}
	if fingerprint(t, reads) != readsBefore {
		t.Error("a mutation changed the reads' store")
	}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}})
	for _, f := range es.Schema().Mutation.Fields {
		if !strings.HasPrefix(f.Name, "__") && !covered[f.Name] {
			t.Errorf("the mutation %s has no case here: add one", f.Name)
		}
	}
}

// fingerprint is what a write can change in db: the records, their
// history, the tokens and the taxonomy's history.
func fingerprint(t *testing.T, db *storage.DB) string {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	if err := db.Maintenance().Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if err := db.Versions().ExportHistory(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	toks, err := db.Tokens().ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tax, err := db.Taxonomies().TaxonomyHistory(ctx, incidentlib.PageArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(&buf).Encode([]any{toks, tax}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func postAdmin(t *testing.T, base, token, query string, vars map[string]any) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}
