package main

import (
	"bytes"
	"compress/flate"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestPurgeThenCompact: after purgeVersion of v1 (its text also in v2
// SUBMIT and v3 REQUEST_CHANGES, gone from v4), `export --history` writes
// no byte of it, and after `incidentlib compact` no byte of the store
// file holds it (the compacted file is written anew: the old file's free
// pages, which held it, are gone), nor any value once decompressed.
func TestPurgeThenCompact(t *testing.T) {
	const text = "QZX-TAKEDOWN-5150-libel"
	path := filepath.Join(t.TempDir(), "purge.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	kim := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "kim", Role: incidentlib.RoleEditor})
	lee := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "lee", Role: incidentlib.RoleReviewer})
	root := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "root", Role: incidentlib.RoleAdmin})
	in := &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "outage " + text}}
	in.Summary.En = strings.Repeat(text+" said ", 600)
	in.Lessons.En = in.Summary.En
	steps := []func() error{
		func() error { _, err := db.Incidents().UpsertIncident(kim, in, incidentlib.WriteOptions{}); return err },
		func() error {
			_, err := db.Incidents().SubmitForReview(kim, "IL-0001", incidentlib.WriteOptions{})
			return err
		},
		func() error {
			_, err := db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionRequestChanges, "sources", incidentlib.WriteOptions{})
			return err
		},
		func() error {
			_, err := db.Incidents().UpsertIncident(kim, &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "outage"}},
				incidentlib.WriteOptions{})
			return err
		},
		func() error { _, err := db.Incidents().PurgeVersion(root, "IL-0001", 1, "takedown"); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	hist, stderr, err := runCmd(t, nil, "", "export", "--history", "--db", path)
	if err != nil || !strings.Contains(hist, `"action":"PURGE"`) {
		t.Fatalf("%v %s %s", err, hist, stderr)
	}
	if strings.Contains(hist, text) {
		t.Fatal("export --history writes the purged text")
	}
	if raw, _ := os.ReadFile(path); !bytes.Contains(raw, []byte(text)) {
		t.Fatal("the file holds the purged text in no free page before compact: the check below proves nothing")
	}
	if out, stderr, err := runCmd(t, nil, "", "compact", "--db", path); err != nil {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(text)) {
		t.Fatal("the compacted file holds the purged text")
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	var walk func(b *bolt.Bucket)
	walk = func(b *bolt.Bucket) {
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(b.Bucket(k))
			} else if len(v) > 1 && v[0] == 'z' {
				if d, err := io.ReadAll(flate.NewReader(bytes.NewReader(v[1:]))); err == nil && bytes.Contains(d, []byte(text)) {
					t.Errorf("the compacted file holds the purged text compressed under %x", k)
				}
			}
			return nil
		})
	}
	_ = bdb.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { walk(b); return nil })
	})
	bdb.Close()
	if out, _, err := runCmd(t, nil, "", "check", "--db", path); err != nil {
		t.Fatalf("check after compact: %s", out)
	}
}
