package storage_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestOpenRefusesDamagedFile damages a real store file at a page boundary
// in each way a disk or a copy can, and opens it: Open answers a
// *CorruptError that names the file and the page, for writing and for
// reading alike, and never panics.
func TestOpenRefusesDamagedFile(t *testing.T) {
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			path, _ := testutil.StoreFile(t, 300)
			page := testutil.Break(t, path, d)
			for _, ro := range []bool{false, true} {
				db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: ro})
				if err == nil {
					db.Close()
					t.Fatalf("read-only %v: opened a file with a damaged page %d", ro, page)
				}
				var ce *storage.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("read-only %v: %v is no CorruptError", ro, err)
				}
				if incidentlib.ErrorCode(err) != incidentlib.ESTORECORRUPT || incidentlib.ErrorMessage(err) != "internal error" {
					t.Errorf("code %s message %q", incidentlib.ErrorCode(err), incidentlib.ErrorMessage(err))
				}
				msg := err.Error()
				if !strings.Contains(msg, path) || !strings.Contains(msg, "page "+strconv.FormatInt(ce.Page, 10)) ||
					!strings.Contains(msg, "backup") || ce.Page < 0 {
					t.Errorf("read-only %v: the message does not name the file, the page and the backup: %s", ro, msg)
				}
			}
		})
	}
}

func TestOpenRefusesEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: ro})
		if err == nil {
			db.Close()
			t.Fatalf("read-only %v: an empty file opened as a store", ro)
		}
		if !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), path) {
			t.Errorf("message: %v", err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file was changed: %v %v", fi, err)
	}
	// A missing file is still a new store.
	db, err := storage.Open(filepath.Join(t.TempDir(), "new.db"), storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// TestDamageUnderOpenStore damages the file under an open store, as a
// failing disk would: reads answer STORE_CORRUPT instead of panicking,
// the store says it is corrupt, writes are refused, and the one log line
// names the file and the page.
func TestDamageUnderOpenStore(t *testing.T) {
	path, incs := testutil.StoreFile(t, 300)
	layout := testutil.Layout(t, path)
	var logs bytes.Buffer
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	page := testutil.BreakAt(t, path, layout, testutil.ZeroedPage)
	ctx := context.Background()
	for range 3 {
		_, err = db.Incidents().FindIncidentsByIDs(ctx, []string{incs[0].ID})
		if incidentlib.ErrorCode(err) != incidentlib.ESTORECORRUPT {
			t.Fatalf("read of a damaged page: %v", err)
		}
	}
	snap := db.Incidents().ReadSnapshot(ctx)
	_, err = snap.FindIncidentsByIDs(ctx, []string{incs[0].ID})
	snap.Release()
	if incidentlib.ErrorCode(err) != incidentlib.ESTORECORRUPT {
		t.Fatalf("snapshot read of a damaged page: %v", err)
	}
	if db.Maintenance().Corrupt() == nil || !db.Maintenance().StoreStats().Corrupt {
		t.Fatal("the store does not report its corruption")
	}
	inc := *incs[1]
	inc.Title.En = "after the damage"
	if _, err := db.Incidents().UpsertIncident(ctx, &inc, incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.ESTORECORRUPT {
		t.Fatalf("a write to a corrupt store: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], path) || !strings.Contains(lines[0], "page="+strconv.FormatInt(page, 10)) ||
		!strings.Contains(lines[0], "backup") {
		t.Fatalf("want one log line naming %s and page %d, got:\n%s", path, page, logs.String())
	}
}

// TestCheckFindsRecurrenceCycles brings recurrence_of links that loop in
// through the change feed's path (ApplyChanges checks no links, as a
// replica applies what its primary sent): check lists each loop once.
func TestCheckFindsRecurrenceCycles(t *testing.T) {
	ctx := context.Background()
	dst := rpOpen(t)
	a, b, c := rpIncident("IL-0001", "Acme", "acme", "a"), rpIncident("IL-0002", "Acme", "acme", "b"), rpIncident("IL-0003", "Acme", "acme", "c")
	d, e, f := rpIncident("IL-0004", "Acme", "acme", "d"), rpIncident("IL-0005", "Acme", "acme", "e"), rpIncident("IL-0006", "Acme", "acme", "f")
	a.RecurrenceOf, b.RecurrenceOf, c.RecurrenceOf = "IL-0002", "IL-0003", "IL-0001" // a loop of three
	d.RecurrenceOf, e.RecurrenceOf = "IL-0005", "IL-0004"                            // a loop of two
	f.RecurrenceOf = "IL-0001"                                                       // leads into a loop: no loop of its own
	var changes []incidentlib.Change
	for i, inc := range []*incidentlib.Incident{a, b, c, d, e, f} {
		changes = append(changes, incidentlib.Change{Seq: uint64(i + 1), ID: inc.ID, Incident: inc})
	}
	if _, err := dst.Incidents().ApplyChanges(ctx, 0, changes); err != nil {
		t.Fatal(err)
	}
	problems, err := dst.Maintenance().Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cycles []string
	for _, p := range problems {
		if strings.HasPrefix(p, "recurrence cycle: ") {
			cycles = append(cycles, strings.SplitN(strings.TrimPrefix(p, "recurrence cycle: "), " (", 2)[0])
		}
	}
	want := []string{"IL-0001 -> IL-0002 -> IL-0003 -> IL-0001", "IL-0004 -> IL-0005 -> IL-0004"}
	if strings.Join(cycles, "|") != strings.Join(want, "|") {
		t.Fatalf("cycles %q, want %q; problems:\n%s", cycles, want, strings.Join(problems, "\n"))
	}
}

// TestFlippedBytesNeverEndTheProcess flips one byte at a time at random
// places of a real store's pages (headers, element positions, keys,
// values) and opens, reads and checks each copy: whatever it finds, the
// process goes on. bbolt walks the pages at open in a goroutine of its own
// where a panic, or a read outside the mapping, would end it.
func TestFlippedBytesNeverEndTheProcess(t *testing.T) {
	path, incs := testutil.StoreFile(t, 300)
	layout := testutil.Layout(t, path)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 4))
	corrupt := 0
	const runs = 60
	for i := range runs {
		b := bytes.Clone(orig)
		page := 2 + rng.Int64N(layout.Pages-2)
		off := rng.Int64N(64) // header and element table, where positions live
		if i%3 == 0 {
			off = rng.Int64N(layout.PageSize)
		}
		b[page*layout.PageSize+off] ^= byte(1 + rng.IntN(255))
		p := filepath.Join(t.TempDir(), "flipped.db")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := storage.Open(p, storage.Options{Taxonomy: seeds.MustTaxonomy()})
		if errors.Is(err, storage.ErrCorrupt) {
			corrupt++
			continue
		}
		if err != nil {
			continue // such as a bucket whose name no longer reads
		}
		ctx := context.Background()
		_, _ = db.Maintenance().Check(ctx)
		_, _ = db.Incidents().FindIncidents(ctx, incidentlib.IncidentFilter{}, incidentlib.IncidentOrder{}, incidentlib.PageArgs{First: ptr(100)})
		for _, inc := range incs[:50] {
			_, _ = db.Incidents().FindIncidentsByIDs(ctx, []string{inc.ID})
		}
		db.Close()
	}
	if corrupt == 0 {
		t.Fatalf("none of %d flipped bytes was found corrupt", runs)
	}
	t.Logf("%d of %d copies refused as corrupt at open", corrupt, runs)
}
