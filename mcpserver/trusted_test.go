package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/mcpserver"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// trustedCount is the one document of the tests' manifest.
const trustedCount = `{ incidents(first: 1) { totalCount } }`

// trustedManifest is a manifest that lists trustedCount alone.
func trustedManifest(t *testing.T) *gqledge.TrustedDocuments {
	t.Helper()
	docs, err := gqledge.ParseTrustedDocuments([]byte(testutil.MustJSON(map[string]string{"count": trustedCount})))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// descriptionWords are words of incidents, none a stop word: their
// prefixes are descriptions of 1 to len words, more than similar_incidents
// searches, so that each of its documents is sent.
var descriptionWords = strings.Fields("consul cluster database outage kubernetes dns timeout replication deadlock cache network storage")

// toolCalls are the arguments each tool is called with under trusted
// documents: between them, every document the tool sends. A tool of
// tools/list that is not here fails the test.
func toolCalls() map[string][]map[string]any {
	var similar []map[string]any
	for n := 1; n <= len(descriptionWords); n++ {
		similar = append(similar, map[string]any{"description": strings.Join(descriptionWords[:n], " ")})
	}
	return map[string][]map[string]any{
		mcpserver.ToolSearchIncidents: {{"query": "Consul", "lang": "en"}, {"filter": map[string]any{"organizations": []string{"roblox"}}, "lang": "KO"}},
		mcpserver.ToolGetIncident:     {{"id": "IL-0213", "lang": "EN"}},
		mcpserver.ToolSimilar:         append(similar, map[string]any{"id": "IL-0215"}),
		mcpserver.ToolLibraryStats:    {{}, {"filter": map[string]any{"organizations": []string{"roblox"}}}},
	}
}

// recording is an Executor that notes every document it sends.
type recording struct {
	next mcpserver.Executor
	mu   sync.Mutex
	sent map[string]bool
}

func (r *recording) Query(ctx context.Context, q string, vars map[string]any, out any) error {
	r.mu.Lock()
	r.sent[q] = true
	r.mu.Unlock()
	return r.next.Query(ctx, q, vars, out)
}

// callEveryTool calls every tool that cs lists with toolCalls' arguments,
// and fails on a tool error or a tool the table lacks.
func callEveryTool(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := toolCalls()
	if len(list.Tools) != len(mcpserver.ToolNames) {
		t.Fatalf("tools/list has %d tools, want %v", len(list.Tools), mcpserver.ToolNames)
	}
	for _, tool := range list.Tools {
		args, ok := calls[tool.Name]
		if !ok {
			t.Errorf("tool %s has no calls in toolCalls: add the arguments that send each of its documents", tool.Name)
			continue
		}
		for _, a := range args {
			if res := call(t, cs, tool.Name, a); res.IsError {
				t.Errorf("%s %v under trusted documents: %s", tool.Name, a, textOf(res))
			}
		}
	}
}

// TestToolsUnderTrustedDocuments: with trusted documents on (a manifest
// of one document of its own) and /mcp on, every tool that tools/list
// gives succeeds over the Streamable HTTP transport with the SDK's
// client, and over the GraphQL-over-HTTP executor of incidentlib mcp
// (its stdio client reading /graphql), which sends exactly
// mcpserver.Documents between the calls; /graphql still refuses a
// document that is in neither list and runs the manifest's. With /mcp
// off, the tools' documents are refused on /graphql like any other.
func TestToolsUnderTrustedDocuments(t *testing.T) {
	hs, _ := library(t, server.Config{TrustedDocuments: trustedManifest(t)})

	t.Run("StreamableHTTP", func(t *testing.T) {
		callEveryTool(t, mustConnect(t, hs.URL, ""))
	})
	t.Run("RemoteExecutor", func(t *testing.T) {
		rec := &recording{next: &mcpserver.GraphQLHTTP{URL: hs.URL + "/graphql", Do: http.DefaultClient.Do}, sent: map[string]bool{}}
		st, ct := mcp.NewInMemoryTransports()
		ss, err := mcpserver.New(rec).Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "incidentlib-test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		callEveryTool(t, cs)
		want := mcpserver.Documents()
		for q := range rec.sent {
			if !slices.Contains(want, q) {
				t.Errorf("a tool sent a document that is not in mcpserver.Documents:\n%s", q)
			}
		}
		for _, q := range want {
			if !rec.sent[q] {
				t.Errorf("toolCalls sent no call with the document\n%s\nadd one", q)
			}
		}
	})
	t.Run("GraphQL", func(t *testing.T) {
		if r := testutil.PostGraphQL(t, hs, map[string]any{"query": `{ incidents(first: 2) { nodes { id } } }`}); r.Code() != gqledge.CodeForbidden {
			t.Errorf("a document in neither list: %d %s", r.Status, r.Body)
		}
		if r := testutil.PostGraphQL(t, hs, map[string]any{"query": trustedCount}); r.Status != http.StatusOK || r.Code() != "" {
			t.Errorf("the manifest's document: %d %s", r.Status, r.Body)
		}
		// A tool's document is listed under its SHA-256 too, as any
		// client's persisted query (those without a required variable).
		byID := 0
		for _, q := range mcpserver.Documents() {
			if strings.Contains(q, "!") {
				continue
			}
			byID++
			sum := sha256.Sum256([]byte(q))
			pq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
			if r := testutil.PostGraphQL(t, hs, map[string]any{"extensions": pq}); r.Status != http.StatusOK || r.Code() != "" {
				t.Errorf("a tool's document by its id: %d %.300s", r.Status, r.Body)
			}
		}
		if byID == 0 {
			t.Error("no tool's document was sent by its id")
		}
	})
	t.Run("MCPOff", func(t *testing.T) {
		off, _ := library(t, server.Config{TrustedDocuments: trustedManifest(t), NoMCP: true})
		for _, q := range mcpserver.Documents() {
			if r := testutil.PostGraphQL(t, off, map[string]any{"query": q}); r.Code() != gqledge.CodeForbidden {
				t.Fatalf("with /mcp off, a tool's document is not refused: %d %s", r.Status, r.Body)
			}
		}
	})
}
