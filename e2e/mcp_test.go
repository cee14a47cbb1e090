package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/mcpserver"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// inspector runs the MCP Inspector's CLI mode (@modelcontextprotocol/inspector,
// the version pinned in package-lock.json) with node and returns its
// standard output and exit code. Its catalog and storage go to a
// temporary home, never the user's.
func inspector(t *testing.T, node string, args ...string) ([]byte, int) {
	t.Helper()
	cli := npmTool(t, "mcp-inspector")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, node, append([]string{cli, "--cli"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("inspector %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("inspector %s: timed out\n%s", strings.Join(args, " "), stderr.String())
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("inspector %s: stderr %s", strings.Join(args, " "), stderr.String())
	}
	return stdout.Bytes(), cmd.ProcessState.ExitCode()
}

// TestMCPInspector: the MCP Inspector's CLI lists the tools (their
// schemas portable: --strict finds no error) and calls them, against
// serve's /mcp (Streamable HTTP) on the real handler and against the
// real binary's incidentlib mcp over stdio reading that handler; an
// unknown id is a tool error carrying NOT_FOUND, not a protocol error.
func TestMCPInspector(t *testing.T) {
	node := nodeAudit(t)
	db := testutil.OpenSeeded(t, storage.Options{})
	ts, _ := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{Search: testutil.OpenSearch(t, db)})
	bin := testutil.BuildBinary(t, "../cmd/incidentlib")

	targets := map[string][]string{
		"HTTP":  {"--transport", "http", ts.URL + "/mcp"},
		"Stdio": {"-e", "INCIDENTLIB_SERVER=" + ts.URL, "--", bin, "mcp"},
	}
	// The Inspector takes its options before the target; a stdio target
	// comes after "--", so that the command's flags stay its own.
	with := func(target []string, args ...string) []string {
		if i := slices.Index(target, "--"); i >= 0 {
			return append(append(append([]string(nil), target[:i]...), args...), target[i:]...)
		}
		return append(append([]string(nil), args...), target...)
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			out, code := inspector(t, node, with(target, "--strict", "--method", "tools/list")...)
			if code != 0 {
				t.Fatalf("tools/list --strict: exit %d: %s", code, out)
			}
			var list struct {
				Tools []struct {
					Name                      string
					InputSchema, OutputSchema map[string]any
				}
			}
			if err := json.Unmarshal(out, &list); err != nil {
				t.Fatalf("tools/list: %v: %s", err, out)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				if tool.InputSchema == nil || tool.OutputSchema == nil {
					t.Errorf("%s: input schema %v, output schema %v", tool.Name, tool.InputSchema != nil, tool.OutputSchema != nil)
				}
			}
			if !slices.Equal(names, slices.Sorted(slices.Values(mcpserver.ToolNames))) {
				t.Fatalf("tools %v", names)
			}

			out, code = inspector(t, node, with(target, "--method", "tools/call", "--tool-name", "get_incident", "--tool-arg", "id=IL-0213", "lang=ko")...)
			var got struct {
				IsError           bool
				Content           []struct{ Type, Text string }
				StructuredContent struct{ ID, Title string }
			}
			if err := json.Unmarshal(out, &got); err != nil || code != 0 {
				t.Fatalf("get_incident: exit %d %v: %s", code, err, out)
			}
			if got.IsError || got.StructuredContent.ID != "IL-0213" || !strings.Contains(got.StructuredContent.Title, "클러스터") ||
				len(got.Content) == 0 || !strings.HasPrefix(got.Content[0].Text, "# IL-0213: ") {
				t.Fatalf("get_incident: %s", out)
			}

			out, code = inspector(t, node, with(target, "--method", "tools/call", "--tool-name", "search_incidents", "--tool-arg", "query=Consul", "first=3")...)
			if code != 0 || !strings.Contains(string(out), `"IL-0213"`) {
				t.Fatalf("search_incidents: exit %d: %s", code, out)
			}

			// A tool error: the Inspector prints the result, then exits
			// non-zero saying the tool returned isError.
			out, _ = inspector(t, node, with(target, "--method", "tools/call", "--tool-name", "get_incident", "--tool-arg", "id=IL-9999")...)
			got.IsError, got.Content = false, nil
			dec := json.NewDecoder(bytes.NewReader(out))
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("get_incident IL-9999: %v: %s", err, out)
			}
			if !got.IsError || len(got.Content) == 0 || !strings.HasPrefix(got.Content[0].Text, "NOT_FOUND: ") {
				t.Fatalf("get_incident IL-9999: %s", out)
			}
		})
	}
}
