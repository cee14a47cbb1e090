package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
)

// filesHolding returns the files under dir that hold s.
func filesHolding(t *testing.T, dir string, s []byte) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while walked (a compacted block)
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if bytes.Contains(data, s) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A purge of a version on a cluster erases the log's message that wrote
// it on every node: within a minute no file of any node's JetStream
// directory holds the purged text.
func TestPurgeErasesTheLog(t *testing.T) {
	c := startCluster(t, 3)
	marker := fmt.Sprintf("purged-text-marker-%d", time.Now().UnixNano())
	inc := incidents(t, 1, 21)[0]
	v1 := *inc
	v1.Title.En = "Outage " + marker
	w := c.members[0].mb.Writer
	if _, err := w.UpsertIncident(editor("ed"), &v1, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := *inc
	v2.Title.En = "Outage, the name taken out"
	if _, err := c.members[1].mb.Writer.UpsertIncident(editor("ed"), &v2, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	last, err := c.members[0].mb.Node.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.level(last)
	for _, m := range c.members {
		if len(filesHolding(t, m.jsDir, []byte(marker))) == 0 {
			t.Fatalf("%s's JetStream files do not hold the text before the purge: the test looks in the wrong place", m.name)
		}
	}
	if _, err := c.members[2].mb.Writer.PurgeVersion(editor("ed"), inc.ID, 1, "a name that must not be kept"); err != nil {
		t.Fatal(err)
	}
	// The stream's own files within a minute; the stream's raft log (the
	// files under $SYS/_js_) at nats-server's next raft snapshot of the
	// stream, which it takes every two to three minutes.
	held := func(raft bool) []string {
		var out []string
		for _, m := range c.members {
			for _, f := range filesHolding(t, m.jsDir, []byte(marker)) {
				if raft || !strings.Contains(filepath.ToSlash(f), "/_js_/") {
					out = append(out, f)
				}
			}
		}
		return out
	}
	for _, wait := range []struct {
		raft bool
		in   time.Duration
	}{{false, time.Minute}, {true, 4 * time.Minute}} {
		var left []string
		for deadline := time.Now().Add(wait.in); ; time.Sleep(time.Second) {
			if left = held(wait.raft); len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > 0 {
			t.Fatalf("%s after the purge the text is still in %v", wait.in, left)
		}
	}
	// The next snapshot (a backup of a node's store, as serve makes it)
	// does not hold it either.
	ctx := context.Background()
	m0 := c.members[0]
	if err := m0.mb.Node.PublishSnapshot(ctx, m0.mb.Applier.Applied(), "", func(w io.Writer) error {
		_, err := m0.db.Maintenance().Backup(ctx, w)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "snapshot.db")
	if _, ok, err := c.members[1].mb.Node.FetchSnapshot(ctx, snap); err != nil || !ok {
		t.Fatalf("fetch the snapshot: %v %v", ok, err)
	}
	if data, err := os.ReadFile(snap); err != nil || bytes.Contains(data, []byte(marker)) || len(data) == 0 {
		t.Fatalf("the snapshot after the purge holds the text (%d bytes, %v)", len(data), err)
	}
	// The log goes on: every node applies a later write and holds the
	// same.
	v3 := v2
	v3.Title.En = "Outage, third version"
	if _, err := w.UpsertIncident(editor("ed"), &v3, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if last, err = c.members[0].mb.Node.LastSeq(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.level(last)
	c.same()
}
