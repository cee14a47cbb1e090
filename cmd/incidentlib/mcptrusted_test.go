package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/mcpserver"
)

// TestMCPStdioUnderTrustedDocuments: incidentlib mcp over stdio, driven
// by the SDK's client, reads a serve of the same binary that runs with
// --trusted-documents (a manifest of one document of its own): every
// tool that tools/list gives succeeds, since serve lists the tools'
// documents while /mcp is on; /graphql still refuses a document in
// neither list. (mcpserver's TestToolsUnderTrustedDocuments sends each
// of the tools' documents, over /mcp and this executor.)
func TestMCPStdioUnderTrustedDocuments(t *testing.T) {
	dir := t.TempDir()
	manifest, _ := json.Marshal(map[string]string{"count": `{ incidents(first: 1) { totalCount } }`})
	docs := filepath.Join(dir, "trusted.json")
	if err := os.WriteFile(docs, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	p := startServe(t, bin, filepath.Join(dir, "il.db"), "--seed", "auto", "--trusted-documents", docs)
	cs := mcpStdio(t, bin, p.base)
	calls := map[string]map[string]any{
		mcpserver.ToolSearchIncidents: {"query": "Consul"},
		mcpserver.ToolGetIncident:     {"id": "IL-0213"},
		mcpserver.ToolSimilar:         {"description": "Consul cluster writes are slow"},
		mcpserver.ToolLibraryStats:    {},
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		args, ok := calls[tool.Name]
		if !ok {
			t.Errorf("tool %s has no call in this test", tool.Name)
			continue
		}
		if res, txt := callText(t, cs, tool.Name, args); res.IsError {
			t.Errorf("%s under --trusted-documents: %s", tool.Name, txt)
		}
	}
	resp, err := http.Post(p.base+"/graphql", "application/json", strings.NewReader(`{"query": "{ incidents(first: 2) { nodes { id } } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"FORBIDDEN"`) {
		t.Errorf("a document in neither list: %d %s", resp.StatusCode, b)
	}
}
