package storage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

func openWith(tb testing.TB, path string, maxRecord int) *storage.DB {
	tb.Helper()
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), NoSync: true, MaxRecordBytes: maxRecord})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func withBlob(inc *incidentlib.Incident, n int) *incidentlib.Incident {
	inc.Extra = incidentlib.Extra{"blob": json.RawMessage(`"` + strings.Repeat("x", n) + `"`)}
	return inc
}

// An upsert runs the one validation of records from outside: control
// characters and a record over the size limit are refused, naming the
// field, and nothing is written.
func TestUpsertRefusesWhatBreaksTheRules(t *testing.T) {
	ctx := context.Background()
	db := rpOpen(t)
	for name, c := range map[string]struct {
		inc   *incidentlib.Incident
		field string
	}{
		"ControlCharacterInTitle": {rpIncident("IL-0001", "Acme", "acme", "a\x1b[2Jb"), "title.en"},
		"BidiOverrideInTitle":     {rpIncident("IL-0001", "Acme", "acme", "abc\u202Egnp.exe"), "title.en"},
		"OneMegabyteRecord":       {withBlob(rpIncident("IL-0001", "Acme", "acme", "big"), 1<<20), ""},
	} {
		t.Run(name, func(t *testing.T) {
			before := db.Incidents().Seq()
			_, err := db.Incidents().UpsertIncident(ctx, c.inc, incidentlib.WriteOptions{})
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("want EINVALID, got %v", err)
			}
			if got := strings.Join(incidentlib.ErrorField(err), "."); got != c.field {
				t.Fatalf("field %q, want %q (%v)", got, c.field, err)
			}
			if db.Incidents().Seq() != before || len(export(t, db)) != 0 {
				t.Fatal("a refused upsert wrote")
			}
		})
	}
}

// Records stored before the rules (a larger --max-record, control
// characters) stay readable, exportable and replicable; check lists them
// as warnings, not problems. A replica takes a record that breaks only
// the text rule, refuses one over its size limit, and a change its reader
// skipped moves the position and writes nothing.
func TestStoredRecordsThatBreakTheRules(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "primary.db")
	src := openWith(t, path, 4<<20)
	rpUpsert(t, src, withBlob(rpIncident("IL-0001", "Acme", "acme", "big"), 1<<20))
	rpUpsert(t, src, rpIncident("IL-0002", "Acme", "acme", "small"))
	src.Close()
	src = openWith(t, path, 0) // the default limit, 256 KiB
	t.Cleanup(func() { src.Close() })

	if got := rpGet(t, src, "IL-0001"); got.Extra == nil {
		t.Fatal("the big record does not read back")
	}
	if !bytes.Contains(export(t, src), []byte(`"blob":"xxx`)) {
		t.Fatal("the big record is not exported")
	}
	mustCheck(t, src) // not corruption
	_, warnings, err := src.Maintenance().CheckAll(ctx)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "IL-0001") || !strings.Contains(warnings[0], "--max-record") {
		t.Fatalf("check warnings %q (%v), want the big record", warnings, err)
	}

	// A replica with the default limit refuses the big record as it is,
	// and takes the page once its reader skipped it.
	dst := rpOpen(t)
	all := changesOf(t, src, 0, 10)
	if _, err := dst.Incidents().ApplyChanges(ctx, 0, all); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("a replica applied a record over its size limit: %v", err)
	}
	skipped := append([]incidentlib.Change(nil), all...)
	for i := range skipped {
		if skipped[i].ID == "IL-0001" {
			skipped[i] = incidentlib.Change{Seq: skipped[i].Seq, ID: skipped[i].ID, Skipped: incidentlib.RuleSize}
		}
	}
	to, err := dst.Incidents().ApplyChanges(ctx, 0, skipped)
	if err != nil || to != src.Incidents().Seq() {
		t.Fatalf("the page with a skipped change: position %d, %v; want %d", to, err, src.Incidents().Seq())
	}
	if incs, _ := dst.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0001", "IL-0002"}); incs[0] != nil || incs[1] == nil {
		t.Fatalf("after the skip: %v", incs)
	}

	// A record with control characters (stored before the rule, here by
	// a replica) is copied as it is; check warns about it.
	ctl := rpIncident("IL-0003", "Acme", "acme", "bell\a and \u202Eoverride")
	ctl.UpdatedAt = "2026-01-01T00:00:00Z"
	if _, err := dst.Incidents().ApplyChanges(ctx, to, []incidentlib.Change{{Seq: to + 1, ID: ctl.ID, Incident: ctl}}); err != nil {
		t.Fatalf("a replica refused a record that breaks only the text rule: %v", err)
	}
	if got := rpGet(t, dst, "IL-0003"); got.Title.En != ctl.Title.En {
		t.Fatalf("title %q", got.Title.En)
	}
	mustCheck(t, dst)
	_, warnings, err = dst.Maintenance().CheckAll(ctx)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "title.en") {
		t.Fatalf("check warnings %q (%v), want the control character of IL-0003", warnings, err)
	}
}
