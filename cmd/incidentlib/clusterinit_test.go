// Elections under the race detector make these slow: make test runs
// them without it, in test-cluster.

//go:build !race

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// An existing single-node library becomes a cluster: `cluster init`
// marks it; the offline writers then refuse its file; served with the
// cluster flags it is node 1 of three, the other two start without a
// store file from the snapshot it publishes; the three hold the library
// with its history byte for byte, the seeds are not published a second
// time (the stream holds only the one write made afterwards), and a write
// through node 3 reaches node 1.
func TestClusterInitEndToEnd(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "n1.db")
	edited := makeLibrary(t, lib)
	before := exportStore(t, lib)

	out, _, err := runCmd(t, nil, "", "cluster", "init", "--db", lib)
	if err != nil || !strings.Contains(out, "is a cluster node's store now") {
		t.Fatalf("cluster init: %v %s", err, out)
	}
	if after := exportStore(t, lib); !bytes.Equal(before, after) {
		t.Fatal("cluster init changed the library's records or history")
	}

	t.Run("OfflineWritersRefuse", func(t *testing.T) {
		input := filepath.Join(t.TempDir(), "in.json")
		if err := os.WriteFile(input, []byte(`[]`), 0o600); err != nil {
			t.Fatal(err)
		}
		for name, args := range map[string][]string{
			"Import":        {"import", "--db", lib, input},
			"ImportHistory": {"import", "--db", lib, historyExportFile(t, lib)},
			"TokenAdd":      {"token", "add", "--db", lib, "--name", "ed", "--role", "editor"},
			"Compact":       {"compact", "--db", lib},
			"Reindex":       {"reindex", "--db", lib},
			"Linkcheck":     {"linkcheck", "--db", lib},
			"SeedsUpdate":   {"seeds", "update", "--db", lib},
			"ClusterInit":   {"cluster", "init", "--db", lib},
			"ServeAlone":    {"serve", "--db", lib, "--addr", testutil.FreeAddr(t), "--search-index", "off"},
		} {
			t.Run(name, func(t *testing.T) {
				_, stderr, err := runCmd(t, nil, "", args...)
				if err == nil {
					t.Fatal("accepted")
				}
				// The refusal itself, not a usage text that names --server.
				if !strings.Contains(err.Error(), "is a cluster node's store (log position 0)") || !strings.Contains(err.Error(), "--server") {
					t.Fatalf("the refusal does not say that the file is a cluster node's and to write with --server: %v\n%s", err, stderr)
				}
			})
		}
		if after := exportStore(t, lib); !bytes.Equal(before, after) {
			t.Fatal("a refused command changed the library")
		}
	})

	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("the-cluster-init-test-shared-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := make([]*initNode, 3)
	var peers []string
	for i := range nodes {
		nodes[i] = &initNode{name: fmt.Sprintf("n%d", i+1), db: filepath.Join(dir, fmt.Sprintf("n%d.db", i+1)),
			addr: testutil.FreeAddr(t), listen: testutil.FreeAddr(t)}
		peers = append(peers, nodes[i].listen)
	}
	for _, n := range nodes {
		n.start(t, peers, secret)
	}
	defer func() {
		for _, n := range nodes {
			n.stop(t)
		}
	}()
	for _, n := range nodes {
		n.waitReady(t)
	}
	for _, n := range nodes[1:] {
		if !strings.Contains(n.stderr.String(), "started from the cluster's snapshot") {
			t.Fatalf("%s did not start from the snapshot:\n%s", n.name, n.stderr.String())
		}
	}

	// A write through node 3 reaches node 1.
	title := "written through node 3"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code := upsertThrough(t, nodes[2].base(), "IL-0900", title)
		if code == "" {
			break
		}
		if code != "UNAVAILABLE" || time.Now().After(deadline) {
			t.Fatalf("the write through n3 answered %s", code)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); readTitleOf(t, nodes[0].base(), "IL-0900") != title; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the write through n3 did not reach n1")
		}
	}
	for _, n := range nodes {
		for deadline := time.Now().Add(30 * time.Second); appliedSeq(n.base()) != 1; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s applied the log to %v, want 1 (the one write)", n.name, appliedSeq(n.base()))
			}
		}
	}
	for _, n := range nodes {
		n.stop(t)
	}

	// The three stores: identical records and history; the stream held
	// the one write (the seeds were not published again); node 1's
	// library is all there, its edits with their versions.
	first := exportStore(t, nodes[0].db)
	for _, n := range nodes {
		if exp := exportStore(t, n.db); !bytes.Equal(first, exp) {
			t.Fatalf("the export of %s differs from n1's (%d and %d bytes)", n.name, len(exp), len(first))
		}
		db := openReadOnly(t, n.db)
		seq, logged, err := db.ClusterLog().LogSeq(context.Background())
		if err != nil || !logged || seq != 1 {
			t.Errorf("%s is at log position %d (logged %v, %v), want 1", n.name, seq, logged, err)
		}
		count, _ := db.Incidents().CountIncidents(context.Background(), incidentlib.IncidentFilter{})
		incs, _ := db.Incidents().FindIncidentsByIDs(context.Background(), []string{edited})
		db.Close()
		if want := len(mustSeeds(t)) + 1; count != want {
			t.Errorf("%s holds %d incidents, want the library's %d and the new one", n.name, count, want-1)
		}
		if incs[0] == nil || incs[0].Title.En != "edited before the cluster" {
			t.Errorf("%s lost the library's edit of %s: %+v", n.name, edited, incs[0])
		}
	}
	if !bytes.Contains(first, before[:bytes.IndexByte(before, '\n')]) {
		t.Error("the cluster's stores do not hold the library's records")
	}
}

// makeLibrary makes a single-node library at path as serve leaves one: the
// seed incidents, then two edits of one of them (a history of three
// versions); it returns the edited incident's id.
func makeLibrary(t *testing.T, path string) string {
	t.Helper()
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	incs := mustSeeds(t)
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true, OnlyIfNew: true}); err != nil {
		t.Fatal(err)
	}
	ed := incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: "ed", Role: incidentlib.RoleEditor})
	id := incs[0].ID
	for _, title := range []string{"a first edit", "edited before the cluster"} {
		got, err := db.Incidents().FindIncidentsByIDs(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		edit := *got[0]
		edit.Title.En = title
		if _, err := db.Incidents().UpsertIncident(ed, &edit, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func openReadOnly(t *testing.T, path string) *storage.DB {
	t.Helper()
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// exportStore returns the export of the store at path, records then every
// version (export and export --history), and fails on a check problem.
func exportStore(t *testing.T, path string) []byte {
	t.Helper()
	return storeExport(t, path, true)
}

// storeExport returns the store's export --history, after its export of
// records when records is set, and fails on a check problem.
func storeExport(t *testing.T, path string, records bool) []byte {
	t.Helper()
	db := openReadOnly(t, path)
	defer db.Close()
	var buf bytes.Buffer
	if records {
		if err := db.Maintenance().Export(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Versions().ExportHistory(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if problems, err := db.Maintenance().Check(context.Background()); err != nil || len(problems) > 0 {
		t.Fatalf("check of %s: %v %v", path, problems, err)
	}
	return buf.Bytes()
}

// historyExportFile writes the store's export --history to a file (an
// import of history lines) and returns its path.
func historyExportFile(t *testing.T, path string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(out, storeExport(t, path, false), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// initNode is one `incidentlib serve` of the cluster, run in process.
type initNode struct {
	name, db, addr, listen string
	stderr                 *syncBuffer
	cancel                 context.CancelFunc
	done                   chan error
}

func (n *initNode) base() string { return "http://" + n.addr }

func (n *initNode) start(t *testing.T, peers []string, secret string, more ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done, n.stderr = cancel, make(chan error, 1), &syncBuffer{}
	args := []string{"serve", "--addr", n.addr, "--db", n.db, "--search-index", "off", "--response-cache-size", "0",
		"--cluster-name", "init", "--node-name", n.name, "--cluster-listen", n.listen, "--cluster-peers", strings.Join(peers, ","),
		"--cluster-secret-file", secret, "--cluster-start-timeout", "60s"}
	args = append(args, more...) // the last of a flag given twice counts
	env := map[string]string{"INCIDENTLIB_ADMIN_TOKEN": crashToken}
	go func() {
		n.done <- run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, n.stderr)
	}()
}

// waitReady waits until the node's /readyz answers 200, and fails with
// its log when it ends or a minute passes first.
func (n *initNode) waitReady(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-n.done:
			n.done <- err
			t.Fatalf("%s ended early: %v\n%s", n.name, err, n.stderr.String())
		default:
		}
		if resp, err := http.Get(n.base() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s did not become ready:\n%s", n.name, n.stderr.String())
}

// stop ends the node's serve and waits for it (once).
func (n *initNode) stop(t *testing.T) {
	t.Helper()
	if n.cancel == nil {
		return
	}
	n.cancel()
	n.cancel = nil
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("%s ended with %v\n%s", n.name, err, n.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not shut down", n.name)
	}
}

// gqlPost posts a GraphQL request with the admin token and decodes the
// answer into out.
func gqlPost(t *testing.T, base, query string, vars map[string]any, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+crashToken)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// upsertThrough writes a new incident id with title through base and
// returns the error code, "" when it was acknowledged.
func upsertThrough(t *testing.T, base, id, title string) string {
	t.Helper()
	var out struct {
		Data struct {
			UpsertIncident *struct {
				Incident   *struct{ ID string }
				UserErrors []struct{ Code string }
			} `json:"upsertIncident"`
		}
		Errors []struct{ Extensions struct{ Code string } }
	}
	gqlPost(t, base, `mutation($input: IncidentInput!) { upsertIncident(input: $input) { incident { id } userErrors { code } } }`,
		map[string]any{"input": map[string]any{"id": id, "org": "Cluster Test", "orgSlug": "cluster-test", "title": map[string]any{"en": title}, "domain": []string{"database"}}}, &out)
	switch u := out.Data.UpsertIncident; {
	case len(out.Errors) > 0:
		return out.Errors[0].Extensions.Code
	case u == nil:
		return "EMPTY"
	case len(u.UserErrors) > 0:
		return u.UserErrors[0].Code
	case u.Incident == nil || u.Incident.ID != id:
		return "WRONG_ANSWER"
	}
	return ""
}

func readTitleOf(t *testing.T, base, id string) string {
	t.Helper()
	var out struct {
		Data struct{ Incident *struct{ Title string } }
	}
	gqlPost(t, base, `query($id: ID!) { incident(id: $id) { title(lang: EN) } }`, map[string]any{"id": id}, &out)
	if out.Data.Incident == nil {
		return ""
	}
	return out.Data.Incident.Title
}

var appliedSeqRe = regexp.MustCompile(`(?m)^incidentlib_cluster_applied_seq (\S+)$`)

// appliedSeq is the node's incidentlib_cluster_applied_seq, -1 when it
// cannot be read.
func appliedSeq(base string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := appliedSeqRe.FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1
	}
	return v
}

func mustSeeds(t *testing.T) []*incidentlib.Incident {
	t.Helper()
	incs, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	return incs
}

// cluster init takes an existing library that no server holds, and
// nothing else.
func TestClusterInitRefuses(t *testing.T) {
	dir := t.TempDir()
	held := filepath.Join(dir, "held.db")
	db, err := storage.Open(held, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	missing := filepath.Join(dir, "missing.db")
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"NoSubcommand":  {Args: []string{"cluster"}, Want: []string{"cluster init --db EXISTING"}},
		"Missing":       {Args: []string{"cluster", "init", "--db", missing}, Want: []string{"no existing library"}},
		"ExtraArgument": {Args: []string{"cluster", "init", "--db", held, "more"}, Want: []string{"unexpected argument"}},
		"Held":          {Args: []string{"cluster", "init", "--db", held, "--open-timeout", "100ms"}, Want: []string{"stop the server that holds it first"}},
	})
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("cluster init made the missing library")
	}
}

// A new node (no store file) that reaches no peer waits for them: it does
// not make an empty store that would follow the stream without the
// library a cluster may have started from (its snapshot).
func TestClusterNewNodeWaitsForItsPeers(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("the-new-node-test-shared-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := &initNode{name: "n1", db: filepath.Join(dir, "n1.db"), addr: testutil.FreeAddr(t), listen: testutil.FreeAddr(t)}
	peers := []string{n.listen, testutil.FreeAddr(t), testutil.FreeAddr(t)} // nobody there
	n.start(t, peers, secret, "--cluster-start-timeout", "500ms", "--cluster-write-timeout", "500ms")
	defer func() { // ended while it waits: serve says so
		n.cancel()
		if err := <-n.done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve ended with %v", err)
		}
	}()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-n.done:
			n.done <- err
			t.Fatalf("the node ended: %v\n%s", err, n.stderr.String())
		default:
		}
		if _, err := os.Stat(n.db); err == nil {
			t.Fatalf("the node made its store without its peers:\n%s", n.stderr.String())
		}
	}
	if !strings.Contains(n.stderr.String(), "this new node waits for its peers") {
		t.Fatalf("the node does not say it waits:\n%s", n.stderr.String())
	}
}
