package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/mcpserver"
)

func TestMCPFlagsNonsenseRefused(t *testing.T) {
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"NoServer":          {Args: []string{"mcp"}, Want: []string{"--server is required"}},
		"ServerNotURL":      {Args: []string{"mcp", "--server", "localhost:8080"}, Want: []string{"--server"}},
		"ServerFTP":         {Args: []string{"mcp", "--server", "ftp://example.com"}, Want: []string{"--server"}},
		"TokenWithSpace":    {Args: []string{"mcp", "--server", "http://127.0.0.1:8080", "--token", "a b"}, Want: []string{"--token"}},
		"TimeoutZero":       {Args: []string{"mcp", "--server", "http://127.0.0.1:8080", "--timeout", "0s"}, Want: []string{"timeout"}},
		"MaxResponseNoUnit": {Args: []string{"mcp", "--server", "http://127.0.0.1:8080", "--max-response", "1000"}, Want: []string{"unit"}},
		"MaxResponseTiny":   {Args: []string{"mcp", "--server", "http://127.0.0.1:8080", "--max-response", "10B"}, Want: []string{"--max-response"}},
		"ServeMCPNotBool":   {Args: []string{"serve", "--mcp=maybe"}, Want: []string{"mcp"}},
	})
}

// mcpStdio opens an MCP session with the SDK's client on the real binary
// running incidentlib mcp over stdio against base, with env.
func mcpStdio(t *testing.T, bin, base string, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--server", base)
	cmd.Env = env
	c := mcp.NewClient(&mcp.Implementation{Name: "incidentlib-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res, b.String()
}

// TestMCPStdioAndHTTP: the real binary's incidentlib mcp over stdio,
// driven by the SDK's client, reads a real serve process of the same
// binary over HTTP: the tools, a happy path, NOT_FOUND, and a token
// that is not valid as UNAUTHENTICATED; the same serve answers /mcp, and
// serve --mcp=false does not.
func TestMCPStdioAndHTTP(t *testing.T) {
	bin := buildBinary(t)
	p := startServe(t, bin, filepath.Join(t.TempDir(), "il.db"), "--seed", "auto")
	cs := mcpStdio(t, bin, p.base)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, slices.Sorted(slices.Values(mcpserver.ToolNames))) {
		t.Fatalf("tools %v", names)
	}
	res, md := callText(t, cs, "get_incident", map[string]any{"id": "IL-0213", "lang": "EN"})
	if res.IsError || !strings.HasPrefix(md, "# IL-0213: Roblox") {
		t.Fatalf("get_incident: %s", md)
	}
	var inc mcpserver.Incident
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &inc); err != nil || inc.OrgSlug != "roblox" {
		t.Fatalf("structured content %s: %v", b, err)
	}
	if res, txt := callText(t, cs, "get_incident", map[string]any{"id": "IL-9999"}); !res.IsError || !strings.HasPrefix(txt, "NOT_FOUND: ") {
		t.Fatalf("unknown id: %v %s", res.IsError, txt)
	}
	if res, txt := callText(t, cs, "search_incidents", map[string]any{"query": "Consul"}); res.IsError || !strings.Contains(txt, "IL-0213") {
		t.Fatalf("search: %s", txt)
	}
	t.Run("BadToken", func(t *testing.T) {
		cs := mcpStdio(t, bin, p.base, "INCIDENTLIB_TOKEN=il_"+strings.Repeat("A", 43))
		if res, txt := callText(t, cs, "library_stats", nil); !res.IsError || !strings.HasPrefix(txt, "UNAUTHENTICATED: ") {
			t.Fatalf("a token that is not valid: %v %s", res.IsError, txt)
		}
	})
	t.Run("ServeHTTP", func(t *testing.T) {
		c := mcp.NewClient(&mcp.Implementation{Name: "incidentlib-test", Version: "1"}, nil)
		hs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp", MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hs.Close()
		if res, txt := callText(t, hs, "library_stats", map[string]any{"filter": map[string]any{"organizations": []string{"roblox"}}}); res.IsError || !strings.HasPrefix(txt, "1 incidents.") {
			t.Fatalf("library_stats over /mcp: %s", txt)
		}
	})
	t.Run("ServeMCPOff", func(t *testing.T) {
		off := startServe(t, bin, filepath.Join(t.TempDir(), "il.db"), "--mcp=false")
		resp, err := http.Post(off.base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("/mcp of serve --mcp=false: %d", resp.StatusCode)
		}
	})
}
