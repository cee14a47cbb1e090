package cluster_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/internal/testutil"
)

// The cluster on an existing NATS (--nats URL --nats-creds FILE): three
// nats-server instances in operator mode, and three members that connect
// to them with a .creds file whose user may use exactly the subjects
// docs/cluster.md lists. Every kind of exchange of the cluster mode goes
// through them (the stream made and followed, conditional publishes, an
// import in chunks read back at its commit, snapshots stored, replaced and
// fetched by a wiped member), so the list is proven sufficient: the
// servers log no permission violation.
func TestExternalNATS(t *testing.T) {
	ext := testutil.StartNATSCluster(t, 3)
	pub, sub := testutil.DocNATSPermissions(t, filepath.Join("..", "docs", "cluster.md"))
	creds := ext.UserCreds(t, "node", pub, sub)

	t.Run("WrongCreds", func(t *testing.T) {
		for name, file := range map[string]string{
			"UnknownAccount": ext.StrangerCreds(t),
			"Missing":        filepath.Join(t.TempDir(), "missing.creds"),
			"NotCreds":       writeFile(t, "not a creds file\n"),
		} {
			t.Run(name, func(t *testing.T) {
				node, err := cluster.Start(context.Background(), cluster.Config{NodeName: "n1", URL: ext.URL, CredsFile: file,
					Logger: slog.New(slog.DiscardHandler)})
				if err == nil {
					node.Close()
					t.Fatal("a node started with a wrong creds file")
				}
				t.Log(err)
				if !strings.Contains(err.Error(), "--nats-creds") || !strings.Contains(err.Error(), file) {
					t.Fatalf("the error does not name --nats-creds and the file: %v", err)
				}
			})
		}
	})

	c := startClusterWith(t, 3, func(m *member) cluster.Config {
		return cluster.Config{NodeName: m.name, URL: ext.URL, CredsFile: creds, WriteTimeout: 10 * time.Second, StartTimeout: time.Minute}
	})
	ctx := context.Background()
	incs := incidents(t, 9, 11)
	for i, inc := range incs {
		m := c.members[i%3]
		stored, err := m.mb.Writer.UpsertIncident(editor(m.name), inc, incidentlib.WriteOptions{})
		if err != nil {
			t.Fatalf("upsert %s through %s: %v\n%s", inc.ID, m.name, err, ext.Violations())
		}
		got, err := m.db.Incidents().FindIncidentsByIDs(ctx, []string{inc.ID})
		if err != nil || got[0] == nil || got[0].UpdatedAt != stored.UpdatedAt {
			t.Fatalf("%s does not read its own write of %s: %v %v", m.name, inc.ID, got, err)
		}
	}
	// A condition judged on another member, and the review workflow.
	edit := *incs[0]
	edit.Title.En = "edited through n2"
	v1 := 1
	if _, err := c.members[1].mb.Writer.UpsertIncident(editor("n2"), &edit, incidentlib.WriteOptions{ExpectedVersion: &v1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.members[2].mb.Writer.UpsertIncident(editor("n3"), &edit, incidentlib.WriteOptions{ExpectedVersion: &v1}); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
		t.Fatalf("a stale expected version answered %v, want CONFLICT", err)
	}
	if _, err := c.members[2].mb.Writer.SubmitForReview(editor("n3"), incs[0].ID, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.members[1].mb.Writer.DeleteIncident(editor("n2"), incs[1].ID, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// An import larger than a message: chunks, read back at the commit.
	big := incidents(t, 600, 12)
	for _, inc := range big {
		inc.ID = strings.Replace(inc.ID, "IL-0", "IL-1", 1)
	}
	if res, err := c.members[2].mb.Writer.ImportIncidents(editor("n3"), big, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil || res.Created != len(big) {
		t.Fatalf("import: %+v %v", res, err)
	}
	c.level(lastSeq(t, c))
	c.same()

	// Snapshots: stored, replaced by a later one (the earlier one's
	// chunks purged), fetched by a member whose store is wiped.
	src := c.members[0]
	backup := func(w io.Writer) error { _, err := src.db.Maintenance().Backup(ctx, w); return err }
	if err := src.mb.Node.PublishSnapshot(ctx, src.mb.Applier.Applied(), "", backup); err != nil {
		t.Fatalf("the first snapshot: %v\n%s", err, ext.Violations())
	}
	for _, inc := range incs[6:] {
		edit := *inc
		edit.Title.En = "after the first snapshot"
		if _, err := c.members[1].mb.Writer.UpsertIncident(editor("n2"), &edit, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.level(lastSeq(t, c))
	if err := src.mb.Node.PublishSnapshot(ctx, src.mb.Applier.Applied(), "", backup); err != nil {
		t.Fatalf("the second snapshot: %v\n%s", err, ext.Violations())
	}
	checkOneSnapshot(t, ext)
	wiped := c.members[2]
	c.stop(wiped)
	if err := os.Remove(wiped.dbPath); err != nil {
		t.Fatal(err)
	}
	c.startFromSnapshot(wiped) // the fetch needs flow control (above 1 MiB)
	// A write through the restored member reaches the others.
	edit = *incs[4]
	edit.Title.En = "through the restored member"
	if _, err := wiped.mb.Writer.UpsertIncident(editor("n3"), &edit, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.level(lastSeq(t, c))
	c.same()
	if v := ext.Violations(); len(v) > 0 {
		t.Fatalf("the permissions docs/cluster.md lists for --nats are not enough:\n%s", strings.Join(v, "\n"))
	}
}

// lastSeq is the stream's last sequence, asked through the first running
// member.
func lastSeq(t *testing.T, c *testCluster) uint64 {
	t.Helper()
	for _, m := range c.members {
		if m.mb != nil {
			last, err := m.mb.Node.LastSeq(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return last
		}
	}
	t.Fatal("no member runs")
	return 0
}

// checkOneSnapshot checks, as an administrator of the NATS cluster, that
// the snapshots' object store holds one object: a replaced snapshot's
// chunks were purged, so the store does not grow with every snapshot.
func checkOneSnapshot(t *testing.T, ext *testutil.NATSCluster) {
	t.Helper()
	ctx := context.Background()
	nc, err := nats.Connect(ext.URL, nats.UserCredentials(ext.UserCreds(t, "admin", nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, cluster.DefaultStream+"_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	st, err := obs.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.GetInfo(ctx, "latest")
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(info.Chunks) + 1; st.(*jetstream.ObjectBucketStatus).StreamInfo().State.Msgs != want {
		t.Fatalf("the snapshots' store holds %d messages, want %d (one snapshot's chunks and its meta): a replaced snapshot was not purged",
			st.(*jetstream.ObjectBucketStatus).StreamInfo().State.Msgs, want)
	}
	// Whole chunks near the message limit, however small the backup's
	// writes: the object store takes at most 4,000 unacknowledged, and a
	// chunk per write of a large store's backup ran past them.
	if full := (info.Size + cluster.SnapshotChunk - 1) / cluster.SnapshotChunk; uint64(info.Chunks) != full {
		t.Fatalf("the snapshot of %d bytes is in %d chunks, want %d of %d bytes", info.Size, info.Chunks, full, cluster.SnapshotChunk)
	}
	if info.Size <= 1<<20 {
		t.Fatalf("the snapshot is %d bytes: the test wants one above 1 MiB, so that its fetch needs flow control", info.Size)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
