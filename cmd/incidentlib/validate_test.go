package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

func TestMaxRecordFlagNonsenseRefused(t *testing.T) {
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"RecordWithoutUnit":  {Args: []string{"serve", "--max-record", "262144"}, Want: []string{"max-record"}},
		"RecordTooSmall":     {Args: []string{"serve", "--max-record", "100B"}, Want: []string{"max-record"}},
		"RecordNotBelowBody": {Args: []string{"serve", "--max-record", "1MiB"}, Want: []string{"max-record", "max-body"}},
		"RecordOverBodyEnv": {Args: []string{"serve", "--max-body", "64KiB"}, Env: map[string]string{"INCIDENTLIB_MAX_RECORD": "128KiB"},
			Want: []string{"max-record", "max-body"}},
	})
}

// serve --max-record bounds the record of an upsert, measured as its
// canonical IL-JSON; control characters in text are refused naming the
// field. The client sees INVALID user errors and nothing is written.
func TestServeMaxRecordAndControlCharacters(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr, "--db", filepath.Join(dir, "il.db"), "--seed", "none",
			"--max-record", "4KiB", "--max-body", "64KiB"},
			func(k string) string {
				return map[string]string{"INCIDENTLIB_ADMIN_TOKEN": "a-test-token-of-some-length-1234"}[k]
			},
			strings.NewReader(""), io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		<-done
	}()
	base := "http://" + addr
	waitHealthy(t, base, done)
	upsert := func(input map[string]any) (stored bool, errs []struct {
		Field   []string
		Code    string
		Message string
	}) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{
			"query":     `mutation($input: IncidentInput!) { upsertIncident(input: $input) { incident { id } userErrors { field code message } } }`,
			"variables": map[string]any{"input": input},
		})
		req, _ := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer a-test-token-of-some-length-1234")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Data struct {
				UpsertIncident struct {
					Incident   *struct{ ID string }
					UserErrors []struct {
						Field   []string
						Code    string
						Message string
					}
				}
			}
			Errors []json.RawMessage
		}
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Errors) > 0 || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		return out.Data.UpsertIncident.Incident != nil, out.Data.UpsertIncident.UserErrors
	}
	record := func(title, summary string) map[string]any {
		return map[string]any{"id": "IL-0001", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": title},
			"summary": map[string]any{"en": summary}}
	}
	t.Run("OverMaxRecord", func(t *testing.T) {
		stored, errs := upsert(record("Big", strings.Repeat("x", 5000)))
		if stored || len(errs) != 1 || errs[0].Code != "INVALID" || !strings.Contains(errs[0].Message, "--max-record") {
			t.Fatalf("stored %v, errors %+v", stored, errs)
		}
	})
	t.Run("ControlCharacterInTitle", func(t *testing.T) {
		stored, errs := upsert(record("a\x1b[2Jb\u202E", "fine"))
		if stored || len(errs) == 0 || errs[0].Code != "INVALID" || strings.Join(errs[0].Field, ".") != "input.title.en" {
			t.Fatalf("stored %v, errors %+v", stored, errs)
		}
	})
	t.Run("MultiLineSummaryAccepted", func(t *testing.T) {
		if stored, errs := upsert(record("Fine", "one\n\ttwo\r\nthree")); !stored || len(errs) > 0 {
			t.Fatalf("stored %v, errors %+v", stored, errs)
		}
	})
}

// review.written_by null stays null through export, import, export,
// byte for byte.
func TestExportImportExportKeepsWrittenByNull(t *testing.T) {
	dir := t.TempDir()
	in := `{"id":"IL-0001","org":"Acme","org_slug":"acme","date":null,"date_kind":null,"title":{"en":"t"},"summary":{},"lessons":{},"trigger":{},"detection":{},"symptoms_text":{},"domain":[],"symptoms":[],"components":[],"contributing":[],"root_cause":null,"severity":null,"impact":{"scope":null,"users":null,"region":null},"timeline":{"detected_after":null,"resolved_after":null},"remediation":[],"action_items":[],"sources":[],"docs":[],"related":[],"recurrence_of":null,"review":{"written_by":null,"reviewed_at":null,"reviewed_by":null},"updated_at":"2026-01-01T00:00:00Z","url":null}` + "\n"
	path := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	db1, db2 := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	if _, stderr, err := runCmd(t, nil, "", "import", "--db", db1, path); err != nil {
		t.Fatalf("import: %v %s", err, stderr)
	}
	first, _, err := runCmd(t, nil, "", "export", "--db", db1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first, `"review":{"written_by":null,`) {
		t.Fatalf("written_by null did not stay null on import: %s", first)
	}
	if _, stderr, err := runCmd(t, nil, first, "import", "--db", db2, "-"); err != nil {
		t.Fatalf("import: %v %s", err, stderr)
	}
	second, _, _ := runCmd(t, nil, "", "export", "--db", db2)
	if first != second {
		t.Fatalf("export → import → export is not byte-identical:\n%s\n%s", first, second)
	}
}

// check lists stored records that break the rules given after they were
// stored as warnings; they are not problems (exit 0).
func TestCheckWarnsAboutRecordsOverTheRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "il.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), MaxRecordBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	big := &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "big"},
		Extra: incidentlib.Extra{"blob": json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)}}
	if _, err := db.Incidents().UpsertIncident(context.Background(), big, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, _, err := runCmd(t, nil, "", "check", "--db", path)
	if err != nil {
		t.Fatalf("check failed on a record over the size limit: %v\n%s", err, out)
	}
	if !strings.Contains(out, "warning: incident IL-0001: record IL-0001 is") || !strings.Contains(out, "check: 1 warnings") || !strings.Contains(out, "check: ok") {
		t.Fatalf("check output:\n%s", out)
	}
	if out, _, err := runCmd(t, nil, "", "check", "--db", path, "--max-record", "2MiB"); err != nil || strings.Contains(out, "warning") {
		t.Fatalf("check --max-record 2MiB warned about a 1MiB record: %v\n%s", err, out)
	}
	if exp, _, err := runCmd(t, nil, "", "export", "--db", path); err != nil || !strings.Contains(exp, `"blob":"xxx`) {
		t.Fatalf("the record is not exported: %v", err)
	}
}
