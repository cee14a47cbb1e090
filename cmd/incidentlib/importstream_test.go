package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// corpus writes n generated records (linked to each other through related
// and recurrence_of, across any batch boundary) as JSON Lines and returns
// the file and its lines.
func corpus(t *testing.T, dir string, n int) (string, []string) {
	t.Helper()
	var buf bytes.Buffer
	err := gen.Stream(gen.Options{Count: n, Seed: 7, Taxonomy: seeds.MustTaxonomy()}, func(inc *incidentlib.Incident) error {
		return gen.WriteJSONL(&buf, []*incidentlib.Incident{inc})
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

func countStored(t *testing.T, db string) int {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	s, err := storage.Open(db, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.Incidents().CountIncidents(context.Background(), incidentlib.IncidentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImportBatches: an import writes in batches, holds one batch at a
// time, and a bad record in the last batch writes nothing.
func TestImportBatches(t *testing.T) {
	dir := t.TempDir()
	file, lines := corpus(t, dir, 60)
	linked := false
	for _, l := range lines {
		linked = linked || strings.Contains(l, `"related":["`) || strings.Contains(l, `"recurrence_of":"IL-`)
	}
	if !linked {
		t.Fatal("the corpus has no links between records")
	}

	t.Run("BadRecordInLastBatchWritesNothing", func(t *testing.T) {
		db := filepath.Join(dir, "bad.db")
		bad := append([]string(nil), lines...)
		bad[len(bad)-1] = strings.Replace(bad[len(bad)-1], `"org_slug":"`, `"date":"2024-02-30","org_slug":"`, 1)
		path := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(path, []byte(strings.Join(bad, "\n")+"\n"), 0o600)
		_, stderr, err := runCmd(t, nil, "", "import", "--db", db, "--batch", "7", path)
		if err == nil || !strings.Contains(stderr, "bad.jsonl:60") || !strings.Contains(stderr, "nothing was written") {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if n := countStored(t, db); n != 0 {
			t.Fatalf("a refused import wrote %d incidents", n)
		}
	})
	t.Run("DanglingLinkInLastBatchWritesNothing", func(t *testing.T) {
		db := filepath.Join(dir, "dangling.db")
		bad := append([]string(nil), lines...)
		var last incidentlib.Incident
		if err := last.UnmarshalJSON([]byte(bad[len(bad)-1])); err != nil {
			t.Fatal(err)
		}
		last.Related = append(last.Related, "IL-9999")
		b, _ := last.MarshalJSON()
		bad[len(bad)-1] = string(b)
		path := filepath.Join(dir, "dangling.jsonl")
		os.WriteFile(path, []byte(strings.Join(bad, "\n")+"\n"), 0o600)
		_, stderr, err := runCmd(t, nil, "", "import", "--db", db, "--batch", "7", path)
		if err == nil || !strings.Contains(stderr, "IL-9999 is not in the library") {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if n := countStored(t, db); n != 0 {
			t.Fatalf("a refused import wrote %d incidents", n)
		}
	})
	t.Run("OneBatchHeldAtATime", func(t *testing.T) {
		db := filepath.Join(dir, "ok.db")
		importHeld.maxRecords, importHeld.maxBytes, importHeld.maxAhead = 0, 0, 0
		out, stderr, err := runCmd(t, nil, "", "import", "--db", db, "--batch", "7", file)
		if err != nil || !strings.Contains(out, "imported 60 records") {
			t.Fatalf("%v %s %s", err, out, stderr)
		}
		if importHeld.maxRecords != 7 {
			t.Fatalf("the import held %d records at once, want one batch of 7", importHeld.maxRecords)
		}
		if importHeld.maxAhead < 1 || importHeld.maxAhead > importer.StreamAhead() {
			t.Fatalf("the import read %d records ahead, bound %d", importHeld.maxAhead, importer.StreamAhead())
		}
		longest := 0
		for _, l := range lines {
			longest = max(longest, len(l))
		}
		if importHeld.maxBytes > 7*longest {
			t.Fatalf("the import held %d bytes of records at once, more than 7 records", importHeld.maxBytes)
		}
		if n := countStored(t, db); n != 60 {
			t.Fatalf("%d incidents stored, want 60", n)
		}
		if out, _, err := runCmd(t, nil, "", "check", "--db", db); err != nil {
			t.Fatalf("check: %s", out)
		}
		// The same input again changes nothing.
		out, _, err = runCmd(t, nil, "", "import", "--db", db, "--batch", "7", file)
		if err != nil || !strings.Contains(out, " 0 incidents written, 60 unchanged") {
			t.Fatalf("%v %s", err, out)
		}
	})
	t.Run("StandardInput", func(t *testing.T) {
		sub := filepath.Join(dir, "stdin")
		db := filepath.Join(sub, "il.db")
		out, stderr, err := runCmd(t, nil, strings.Join(lines, "\n")+"\n", "import", "--db", db, "--batch", "25", "-")
		if err != nil || !strings.Contains(out, "imported 60 records") {
			t.Fatalf("%v %s %s", err, out, stderr)
		}
		if n := countStored(t, db); n != 60 {
			t.Fatalf("%d incidents stored, want 60", n)
		}
		left, _ := filepath.Glob(filepath.Join(sub, ".import-stdin-*"))
		if len(left) > 0 {
			t.Fatalf("the spool of standard input was left behind: %v", left)
		}
		// A bad record on standard input is named by its line.
		_, stderr, err = runCmd(t, nil, lines[0]+"\n{\"id\":\"IL-0002\"}\n", "import", "--db", db, "-")
		if err == nil || !strings.Contains(stderr, "stdin:2") {
			t.Fatalf("%v %s", err, stderr)
		}
	})
}

// TestImportRecordSizeLimit: one limit, one message, on both import paths.
func TestImportRecordSizeLimit(t *testing.T) {
	dir := t.TempDir()
	_, lines := corpus(t, dir, 3)
	big := strings.Replace(lines[1], `"org":`, `"notes":"`+strings.Repeat("x", 300<<10)+`","org":`, 1)
	path := filepath.Join(dir, "big.jsonl")
	os.WriteFile(path, []byte(lines[0]+"\n"+big+"\n"+lines[2]+"\n"), 0o600)
	want := "big.jsonl:2 (IL-0002): record IL-0002 is 3"
	limit := "over the limit of 262144 bytes (--max-record)"

	db := filepath.Join(dir, "il.db")
	_, stderr, err := runCmd(t, nil, "", "import", "--db", db, path)
	if err == nil || !strings.Contains(stderr, want) || !strings.Contains(stderr, limit) {
		t.Fatalf("--db: %v\n%s", err, stderr)
	}
	if n := countStored(t, db); n != 0 {
		t.Fatalf("a refused import wrote %d incidents", n)
	}
	// A line far over the limit is refused without being held.
	huge := filepath.Join(dir, "huge.jsonl")
	os.WriteFile(huge, []byte(lines[0]+"\n"+`{"id":"IL-0009","x":"`+strings.Repeat("y", 2<<20)+`"}`+"\n"), 0o600)
	importHeld.maxBytes = 0
	_, stderr, err = runCmd(t, nil, "", "import", "--db", db, huge)
	if err == nil || !strings.Contains(stderr, "huge.jsonl:2 (IL-0009): record IL-0009 is 2097") || importHeld.maxBytes > 256<<10 {
		t.Fatalf("%v held %d bytes\n%s", err, importHeld.maxBytes, stderr)
	}

	env := map[string]string{"INCIDENTLIB_TOKEN": crashToken}
	base := serveInProcess(t, filepath.Join(dir, "live.db"))
	_, stderr, err = runCmd(t, env, "", "import", "--server", base, path)
	if err == nil || !strings.Contains(stderr, want) || !strings.Contains(stderr, limit) {
		t.Fatalf("--server: %v\n%s", err, stderr)
	}

	out, stderr, err := runCmd(t, nil, "", "import", "--db", db, "--max-record", "1MiB", path)
	if err != nil || !strings.Contains(out, "imported 3 records") {
		t.Fatalf("--max-record 1MiB: %v %s %s", err, out, stderr)
	}
	for _, v := range []string{"0", "100B", "2GiB", "12"} {
		if _, _, err := runCmd(t, nil, "", "import", "--db", db, "--max-record", v, path); err == nil || !strings.Contains(err.Error(), "max-record") {
			t.Fatalf("--max-record %s: %v", v, err)
		}
	}
}

// TestImportThroughServerBatches: import --server sends bounded requests,
// and links to records of later requests arrive whole.
func TestImportThroughServerBatches(t *testing.T) {
	dir := t.TempDir()
	file, _ := corpus(t, dir, 40)
	base := serveInProcess(t, filepath.Join(dir, "live.db"))
	env := map[string]string{"INCIDENTLIB_TOKEN": crashToken}
	importHeld.maxRecords = 0
	out, stderr, err := runCmd(t, env, "", "import", "--server", base, "--chunk", "6", file)
	if err != nil || !strings.Contains(out, "imported 40 records") {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	if importHeld.maxRecords != 6 {
		t.Fatalf("held %d records at once, want 6", importHeld.maxRecords)
	}
	// What the server holds is what import --db makes of the same file.
	db := filepath.Join(dir, "local.db")
	if _, stderr, err := runCmd(t, nil, "", "import", "--db", db, file); err != nil {
		t.Fatal(stderr)
	}
	local, _, _ := runCmd(t, nil, "", "export", "--db", db)
	for _, line := range strings.Split(strings.TrimSpace(local), "\n") {
		var want incidentlib.Incident
		if err := want.UnmarshalJSON([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"related"`) && want.RecurrenceOf == "" {
			continue
		}
		got := fetchIncident(t, base, want.ID)
		if strings.Join(got.Related, ",") != strings.Join(want.Related, ",") || got.RecurrenceOf != want.RecurrenceOf {
			t.Fatalf("%s: links %v %q through the server, %v %q in the file", want.ID, got.Related, got.RecurrenceOf, want.Related, want.RecurrenceOf)
		}
	}
}

// fetchIncident reads one incident's links through the server's GraphQL.
func fetchIncident(t *testing.T, base, id string) incidentlib.Incident {
	t.Helper()
	rf := remoteFlags{server: &base, token: new(string), timeout: new(time.Duration)}
	*rf.timeout = time.Minute
	*rf.token = crashToken
	r, err := rf.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	var out struct {
		Incident struct {
			Related      []struct{ ID string }
			RecurrenceOf *struct{ ID string }
		}
	}
	if err := r.graphql(context.Background(), `query($id: ID!) { incident(id: $id) { related { id } recurrenceOf { id } } }`, map[string]any{"id": id}, &out); err != nil {
		t.Fatal(err)
	}
	var inc incidentlib.Incident
	for _, r := range out.Incident.Related {
		inc.Related = append(inc.Related, r.ID)
	}
	if out.Incident.RecurrenceOf != nil {
		inc.RecurrenceOf = out.Incident.RecurrenceOf.ID
	}
	return inc
}

// testKilledImportIsReported kills the real binary between two batches of
// an import: check reports the interrupted import, and running the import
// again completes it into the store an uninterrupted import makes. The
// second case stops in the second of the windows between which an import
// writes its postings and its sorted index keys.
func testKilledImportIsReported(t *testing.T, bin string) {
	for _, c := range []struct{ records, batch, stopAfter int }{{10, 3, 2}, {90, 1, 40}} {
		t.Run(fmt.Sprintf("%dRecordsStopAfter%d", c.records, c.stopAfter), func(t *testing.T) {
			testKilledImport(t, bin, c.records, c.batch, c.stopAfter)
		})
	}
}

func testKilledImport(t *testing.T, bin string, records, batch, stopAfter int) {
	dir := t.TempDir()
	file, _ := corpus(t, dir, records)
	db := filepath.Join(dir, "il.db")
	cmd := exec.Command(bin, "import", "--db", db, "--batch", strconv.Itoa(batch), file)
	cmd.Env = []string{envImportStopAfter + "=" + strconv.Itoa(stopAfter)}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	stopped := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), fmt.Sprintf("stopped after batch %d", stopAfter)) {
			stopped = true
			break
		}
	}
	if !stopped {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the import did not reach the hook")
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()

	done := stopAfter * batch
	out, _, code := runBin(t, bin, "check", "--db", db)
	if code == 0 || !strings.Contains(out, fmt.Sprintf("an import was interrupted after %d of %d records; re-run it: imports are idempotent", done, records)) {
		t.Fatalf("check after the kill (exit %d):\n%s", code, out)
	}
	out, errOut, code := runBin(t, bin, "import", "--db", db, "--batch", strconv.Itoa(batch), file)
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("interrupted after %d of %d", done, records)) ||
		!strings.Contains(out, fmt.Sprintf("%d created, %d updated", records-done, done)) {
		t.Fatalf("re-run (exit %d): %s %s", code, out, errOut)
	}
	if out, _, code := runBin(t, bin, "check", "--db", db); code != 0 {
		t.Fatalf("check after the re-run: %s", out)
	}
	clean := filepath.Join(dir, "clean.db")
	if _, errOut, code := runBin(t, bin, "import", "--db", clean, file); code != 0 {
		t.Fatal(errOut)
	}
	a, _, _ := runBin(t, bin, "export", "--db", db)
	b, _, _ := runBin(t, bin, "export", "--db", clean)
	if a != b || strings.Count(a, "\n") != records {
		t.Fatal("the completed import differs from an uninterrupted one")
	}
	// Written in many batches, or in one: the same store, indexes and all.
	many := filepath.Join(dir, "many.db")
	if _, errOut, code := runBin(t, bin, "import", "--db", many, "--batch", strconv.Itoa(batch), file); code != 0 {
		t.Fatal(errOut)
	}
	if out, _, code := runBin(t, bin, "check", "--db", many); code != 0 {
		t.Fatalf("check after an import in %d batches: %s", (records+batch-1)/batch, out)
	}
}
