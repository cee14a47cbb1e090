package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// auditResult is one result of graphql-http's auditServer.
type auditResult struct {
	ID       string `json:"id"`
	Name     string `json:"name"` // "MUST ...", "SHOULD ...", "MAY ..."
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Response string `json:"response"`
}

// nodeAudit finds node and the pinned graphql-http of e2e/node_modules,
// or fails the test: like the browser, the audit client is required (make test
// runs `npm ci` in e2e/).
func nodeAudit(t *testing.T) string {
	t.Helper()
	node := os.Getenv("INCIDENTLIB_NODE")
	if node == "" {
		p, err := exec.LookPath("node")
		if err != nil {
			t.Fatal("no node: install Node.js (make system-deps, as make test does) or set INCIDENTLIB_NODE")
		}
		node = p
	}
	if _, err := os.Stat(filepath.Join("node_modules", "graphql-http", "package.json")); err != nil {
		t.Fatal("no e2e/node_modules/graphql-http: run `npm ci` in e2e/ (as make test does)")
	}
	return node
}

// TestGraphQLOverHTTPAudit runs the GraphQL-over-HTTP specification's audit
// client (graphql-http's auditServer, the version pinned in
// package-lock.json) against the real handler on loopback. Every MUST
// audit has to pass; the SHOULD and MAY results that do not are listed in
// the log (and in docs/graphql-over-http.md).
func TestGraphQLOverHTTPAudit(t *testing.T) {
	node := nodeAudit(t)
	ts, _ := testutil.ServerTest(t, testutil.OpenSeeded(t, storage.Options{}), server.Config{}, testutil.ServerParts{})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "audit.mjs", ts.URL+"/graphql")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node audit.mjs: %v\n%s", err, stderr.String())
	}
	var results []auditResult
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		t.Fatalf("the audit's output: %v: %.500s", err, stdout.String())
	}
	if len(results) < 20 {
		t.Fatalf("only %d audits ran", len(results))
	}
	counts := map[string][2]int{} // level: ok, not ok
	for _, r := range results {
		level, _, _ := strings.Cut(r.Name, " ")
		c := counts[level]
		if r.Status == "ok" {
			c[0]++
		} else {
			c[1]++
			if level == "MUST" {
				t.Errorf("%s %s: %s: %s\n  %s", r.ID, r.Name, r.Status, r.Reason, r.Response)
			} else {
				t.Logf("%s %s %s: %s: %s", level, r.ID, r.Name, r.Status, r.Reason)
			}
		}
		counts[level] = c
	}
	for _, level := range []string{"MUST", "SHOULD", "MAY"} {
		t.Logf("%s: %d passed, %d not", level, counts[level][0], counts[level][1])
	}
}
