package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryCommands: export --history, history import into a new
// store, export --history again is byte-identical; export, import, export
// too; history compact --before keeps each incident's latest version and
// check stays clean.
func TestHistoryCommands(t *testing.T) {
	dir := t.TempDir()
	db, db2, db3 := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")
	files, _ := filepath.Glob(filepath.Join("..", "..", "seeds", "incidents", "00*.json"))
	if out, stderr, err := runCmd(t, nil, "", append([]string{"import", "--db", db}, files...)...); err != nil {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	// seeds update writes versions by "seeds" where the seeds differ.
	if out, stderr, err := runCmd(t, nil, "", "seeds", "update", "--db", db); err != nil {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	hist, _, err := runCmd(t, nil, "", "export", "--history", "--db", db)
	if err != nil || lineCount(hist) != 5 {
		t.Fatalf("%v: %d lines", err, lineCount(hist))
	}
	f := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(f, []byte(hist), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runCmd(t, nil, "", "history", "import", "--db", db2, f); err != nil || !strings.Contains(out, "5 incidents") {
		t.Fatalf("%v %s", err, out)
	}
	again, _, _ := runCmd(t, nil, "", "export", "--history", "--db", db2)
	if again != hist {
		t.Fatal("export --history, history import, export --history is not byte-identical")
	}
	if _, _, err := runCmd(t, nil, "", "history", "import", "--db", db2, f); err == nil {
		t.Fatal("a second history import of the same ids was not refused")
	}
	plain, _, _ := runCmd(t, nil, "", "export", "--db", db)
	p := filepath.Join(dir, "plain.jsonl")
	if err := os.WriteFile(p, []byte(plain), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := runCmd(t, nil, "", "import", "--db", db3, p); err != nil {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	if again, _, _ := runCmd(t, nil, "", "export", "--db", db3); again != plain {
		t.Fatal("export, import, export is not byte-identical")
	}
	if out, _, err := runCmd(t, nil, "", "history", "compact", "--db", db, "--before", "2999-01-01"); err != nil || !strings.Contains(out, "removed") {
		t.Fatalf("%v %s", err, out)
	}
	if out, _, err := runCmd(t, nil, "", "check", "--db", db); err != nil {
		t.Fatalf("check after history compact: %s", out)
	}
	if _, _, err := runCmd(t, nil, "", "history", "compact", "--db", db); err == nil {
		t.Fatal("history compact without --before ran")
	}
}
