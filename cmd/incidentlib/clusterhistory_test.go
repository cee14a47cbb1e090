//go:build clustertest

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// A history imported through one node of a three-process cluster reaches
// every node: `import --server NODE --token ADMIN history.jsonl` through
// n1 (an import that fits one message of the log), then a larger one
// through n3 (published in chunks), and every node's backup exports,
// with `export --history`, exactly the lines imported. Before the write
// side was one interface, the node's own store took the import and the
// other two nodes held none of it, for good.
func TestClusterHistoryImportReachesEveryNode(t *testing.T) {
	dir := t.TempDir()
	small := writeHistoryFile(t, filepath.Join(dir, "small.jsonl"), 30, 1000, 2)
	large := writeHistoryFile(t, filepath.Join(dir, "large.jsonl"), 120, 3000, 1)
	// The large one goes in chunks (cluster/historyimport.go: over 256 KiB),
	// and in one request (the default body limit is 1 MiB).
	if len(large) <= 256<<10 || len(large) > 900<<10 {
		t.Fatalf("the large history is %d bytes: it should need chunks and fit one request", len(large))
	}
	bin := buildBinary(t)
	c := newProcCluster(t, bin)

	for _, imp := range []struct {
		node  *clusterNode
		file  string
		count int
	}{{c.nodes[0], "small.jsonl", 30}, {c.nodes[2], "large.jsonl", 120}} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "import", "--server", imp.node.base, "--token", crashToken, filepath.Join(dir, imp.file))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("import %s through %s: %v\n%s%s", imp.file, imp.node.name, err, stdout.String(), stderr.String())
		}
		if want := fmt.Sprintf("imported the history of %d incidents", imp.count); !strings.Contains(stdout.String(), want) {
			t.Fatalf("import %s through %s said %q, want %q", imp.file, imp.node.name, stdout.String(), want)
		}
	}
	c.level() // every node at the same position, the same stores

	want := append(append([]byte(nil), small...), large...)
	for _, n := range c.nodes {
		got := c.exportHistoryOf(n)
		if !bytes.Equal(got, want) {
			t.Errorf("export --history of %s's backup: %d bytes, want the %d bytes imported", n.name, len(got), len(want))
		}
		if strings.Contains(n.stderr.String(), "went around the cluster's log") {
			t.Errorf("%s refused a write without a log position: %s", n.name, n.stderr.String())
		}
	}
}

// writeHistoryFile writes the history of n incidents from id first, each
// written versions times, as export --history writes it, to path, and
// returns its bytes.
func writeHistoryFile(t *testing.T, path string, n, first, versions int) []byte {
	t.Helper()
	db, err := storage.Open(filepath.Join(t.TempDir(), "src.db"), storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	incs, err := gen.Generate(gen.Options{Count: n, Seed: int64(first), FirstID: uint32(first), Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "ada", Role: incidentlib.RoleAdmin})
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	for v := 2; v <= versions; v++ {
		for _, inc := range incs {
			inc.Title.En = fmt.Sprintf("%s (version %d)", inc.Title.En, v)
			inc.UpdatedAt, inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", "", "" // the review is the store's
			if _, err := db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if err := db.Versions().ExportHistory(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// exportHistoryOf takes a backup of node n through its API and runs
// `export --history` on it.
func (c *procCluster) exportHistoryOf(n *clusterNode) []byte {
	t := c.t
	path := c.backupOf(n, "history")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(c.bin, "export", "--history", "--db", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("export --history of %s's backup: %v\n%s", n.name, err, stderr.String())
	}
	return stdout.Bytes()
}
