package cluster_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// A history imported through one node reaches every node as given: one
// larger than a message goes in chunks and a commit, and every store
// exports the imported lines byte for byte. Imported again through
// another node it is refused (CONFLICT) at apply, recorded identically on
// every node.
func TestHistoryImportThroughTheLog(t *testing.T) {
	src, err := storage.Open(filepath.Join(t.TempDir(), "src.db"), storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	incs := incidents(t, 300, 11)
	if _, err := src.Incidents().ImportIncidents(editor("ed"), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	var hist bytes.Buffer
	if err := src.Versions().ExportHistory(context.Background(), &hist); err != nil {
		t.Fatal(err)
	}
	if hist.Len() <= 256<<10 {
		t.Fatalf("the history is %d bytes: too small to need chunks", hist.Len())
	}

	c := startCluster(t, 3)
	admin := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "ada", Role: incidentlib.RoleAdmin})
	n, err := c.members[1].mb.Writer.ImportHistory(admin, bytes.NewReader(hist.Bytes()))
	if err != nil || n != len(incs) {
		t.Fatalf("import through n2: %d, %v; want %d", n, err, len(incs))
	}
	last, err := c.members[0].mb.Node.LastSeq(context.Background())
	if err != nil || last < 3 {
		t.Fatalf("the import took %d messages (%v): want chunks and a commit", last, err)
	}
	c.level(last)
	c.same()
	for _, m := range c.members {
		var got bytes.Buffer
		if err := m.db.Versions().ExportHistory(context.Background(), &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), hist.Bytes()) {
			t.Errorf("%s's export --history is %d bytes, not the %d imported", m.name, got.Len(), hist.Len())
		}
	}

	t.Run("ErrInvalid", func(t *testing.T) {
		before, err := c.members[0].mb.Node.LastSeq(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		bad := append(append([]byte(nil), hist.Bytes()...), []byte("{\"id\":\"IL-9999\"}\n")...)
		if _, err := c.members[0].mb.Writer.ImportHistory(admin, bytes.NewReader(bad)); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("a line without a history answered %v, want INVALID", err)
		}
		if after, err := c.members[0].mb.Node.LastSeq(context.Background()); err != nil || after != before {
			t.Fatalf("the refused import was published: the log went from %d to %d (%v)", before, after, err)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		if _, err := c.members[2].mb.Writer.ImportHistory(admin, bytes.NewReader(hist.Bytes())); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("the same history again answered %v, want CONFLICT", err)
		}
		last, err := c.members[0].mb.Node.LastSeq(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c.level(last)
		c.same()
		rej, err := c.members[0].db.ClusterLog().Rejections(context.Background())
		if err != nil || len(rej) != 1 || rej[0].Code != incidentlib.ECONFLICT {
			t.Fatalf("the refusals are %v (%v), want the import's CONFLICT", rej, err)
		}
	})
}
