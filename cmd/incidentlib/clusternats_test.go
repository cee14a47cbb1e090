// Elections under the race detector make these slow: make test runs
// them without it, in test-cluster.

//go:build !race

package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// serve --nats URL --nats-creds FILE on an existing NATS cluster (three
// nats-server instances in operator mode), with the permissions
// docs/cluster.md lists: the node is ready without waiting for its start
// timeout, publishes the seeds through the new stream, takes writes, and
// takes the cluster's snapshots itself (no node's server leads the
// stream); credentials the servers refuse stop serve at start.
func TestClusterServeOnExistingNATS(t *testing.T) {
	ext := testutil.StartNATSCluster(t, 3)
	pub, sub := testutil.DocNATSPermissions(t, filepath.Join("..", "..", "docs", "cluster.md"))
	creds := ext.UserCreds(t, "node", pub, sub)
	dir := t.TempDir()

	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"RefusedCreds": {Args: []string{"serve", "--db", filepath.Join(dir, "x.db"), "--addr", testutil.FreeAddr(t), "--search-index", "off",
			"--nats", ext.URL, "--nats-creds", ext.StrangerCreds(t), "--node-name", "x"}, Want: []string{"--nats-creds"}},
		"CredsWithoutNATS": {Args: []string{"serve", "--db", filepath.Join(dir, "x.db"), "--addr", testutil.FreeAddr(t),
			"--nats-creds", creds}, Want: []string{"--nats"}},
	})

	// The node's store exists (empty): a node without one waits 10 s for
	// a snapshot on a new cluster's empty stream first.
	n := &initNode{name: "a", db: filepath.Join(dir, "a.db"), addr: testutil.FreeAddr(t)}
	empty, err := storage.Open(n.db, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	empty.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done, n.stderr = cancel, make(chan error, 1), &syncBuffer{}
	args := []string{"serve", "--addr", n.addr, "--db", n.db, "--search-index", "off", "--response-cache-size", "0",
		"--nats", ext.URL, "--nats-creds", creds, "--node-name", n.name, "--cluster-snapshot-interval", "1s", "--cluster-start-timeout", "5m", "--log-level", "warn"}
	env := map[string]string{"INCIDENTLIB_ADMIN_TOKEN": crashToken}
	go func() {
		n.done <- run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, n.stderr)
	}()
	defer n.stop(t)
	// Ready within a minute, well before the start timeout: the node does
	// not wait for a copy of the stream it does not hold.
	n.waitReady(t)

	seeded := len(mustSeeds(t))
	for deadline := time.Now().Add(30 * time.Second); incidentCount(t, n.base()) != seeded; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the seeds did not arrive through the stream: %d incidents\n%s", incidentCount(t, n.base()), n.stderr.String())
		}
	}
	if code := upsertThrough(t, n.base(), "IL-0900", "through an existing NATS"); code != "" {
		t.Fatalf("the write answered %s", code)
	}
	if got := readTitleOf(t, n.base(), "IL-0900"); got != "through an existing NATS" {
		t.Fatalf("the node reads %q", got)
	}
	// The node took the cluster's snapshot of its store at the write.
	applied := appliedSeq(n.base())
	nc, err := nats.Connect(ext.URL, nats.UserCredentials(ext.UserCreds(t, "admin", nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var seq float64
	for deadline := time.Now().Add(30 * time.Second); seq != applied; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at log position %v (the latest is at %v)\n%s", applied, seq, n.stderr.String())
		}
		if obs, err := js.ObjectStore(context.Background(), cluster.DefaultStream+"_SNAPSHOTS"); err == nil {
			if info, err := obs.GetInfo(context.Background(), "latest"); err == nil {
				seq, _ = strconv.ParseFloat(info.Metadata["log-seq"], 64)
			}
		}
	}
	n.stop(t)
	if v := ext.Violations(); len(v) > 0 {
		t.Fatalf("the permissions docs/cluster.md lists for --nats are not enough:\n%s", strings.Join(v, "\n"))
	}
}

// A library made a cluster node publishes itself as the cluster's first
// snapshot on an empty stream, once (a restart publishes nothing more);
// a stream that began without it is refused, naming the way out.
func TestClusterPublishInitial(t *testing.T) {
	ext := testutil.StartNATSCluster(t, 3)
	admin := ext.UserCreds(t, "admin", nil, nil)
	lib := filepath.Join(t.TempDir(), "lib.db")
	makeLibrary(t, lib)
	if _, _, err := runCmd(t, nil, "", "cluster", "init", "--db", lib); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	start := func(stream string) *cluster.Node {
		node, err := cluster.Start(ctx, cluster.Config{NodeName: "n1", URL: ext.URL, CredsFile: admin, Stream: stream, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(node.Close)
		return node
	}
	db, err := storage.Open(lib, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	t.Run("EmptyStream", func(t *testing.T) {
		node := start("EMPTY")
		if err := publishInitial(ctx, node, db, logger); err != nil {
			t.Fatal(err)
		}
		seq, at, ok, err := node.LatestSnapshot(ctx)
		if err != nil || !ok || seq != 0 {
			t.Fatalf("the snapshot: seq %d, ok %v, %v", seq, ok, err)
		}
		if err := publishInitial(ctx, node, db, logger); err != nil {
			t.Fatal(err)
		}
		if _, again, _, _ := node.LatestSnapshot(ctx); !again.Equal(at) {
			t.Fatal("a restart published the library again")
		}
		// Another library made a cluster node joins this cluster: it is
		// refused (following the stream over it would mix the two).
		other := filepath.Join(t.TempDir(), "other.db")
		makeLibrary(t, other)
		if _, _, err := runCmd(t, nil, "", "cluster", "init", "--db", other); err != nil {
			t.Fatal(err)
		}
		odb, err := storage.Open(other, storage.Options{Taxonomy: seeds.MustTaxonomy()})
		if err != nil {
			t.Fatal(err)
		}
		defer odb.Close()
		err = publishInitial(ctx, node, odb, logger)
		if err == nil || !strings.Contains(err.Error(), "another library") {
			t.Fatalf("publishInitial of another library answered %v, want a refusal", err)
		}
		if _, again, _, _ := node.LatestSnapshot(ctx); !again.Equal(at) {
			t.Fatal("another library's snapshot replaced the cluster's")
		}
	})
	t.Run("StreamBeganWithoutIt", func(t *testing.T) {
		// One stream of the library's subjects per account: the first
		// case's goes.
		nc, err := nats.Connect(ext.URL, nats.UserCredentials(admin))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if err := js.DeleteStream(ctx, "EMPTY"); err != nil {
			t.Fatal(err)
		}
		node := start("BEGUN")
		if _, err := node.LastSeq(ctx); err != nil { // makes the stream
			t.Fatal(err)
		}
		if _, _, err := node.Publish(ctx, cluster.SubjectLibrary, "first", nil, nil, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		err = publishInitial(ctx, node, db, logger)
		if err == nil || !strings.Contains(err.Error(), "began without it") || !strings.Contains(err.Error(), "import --server") {
			t.Fatalf("publishInitial answered %v, want a refusal", err)
		}
		if has, _ := node.HasSnapshot(ctx); has {
			t.Fatal("the library was published into a stream that began without it")
		}
	})
}

// incidentCount is the node's incidents' totalCount, -1 on a failure.
func incidentCount(t *testing.T, base string) int {
	t.Helper()
	var out struct {
		Data struct{ Incidents *struct{ TotalCount int } }
	}
	gqlPost(t, base, `{ incidents { totalCount } }`, nil, &out)
	if out.Data.Incidents == nil {
		return -1
	}
	return out.Data.Incidents.TotalCount
}
