package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportHistoryFile: import --db of an export --history file equals
// history import of it (the same export --history afterwards); a second
// import is refused naming the id; a file mixing histories and records is
// refused naming the line and writes nothing, and so are a history file
// and a record file given together.
func TestImportHistoryFile(t *testing.T) {
	dir := t.TempDir()
	src, viaImport, viaHistory, empty := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db"), filepath.Join(dir, "d.db")
	files, _ := filepath.Glob(filepath.Join("..", "..", "seeds", "incidents", "00*.json"))
	if out, stderr, err := runCmd(t, nil, "", append([]string{"import", "--db", src}, files...)...); err != nil {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	if out, stderr, err := runCmd(t, nil, "", "seeds", "update", "--db", src); err != nil {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	hist, _, err := runCmd(t, nil, "", "export", "--history", "--db", src)
	if err != nil || lineCount(hist) != 5 {
		t.Fatalf("%v: %d lines", err, lineCount(hist))
	}
	plain, _, _ := runCmd(t, nil, "", "export", "--db", src)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hf, pf := write("history.jsonl", hist), write("plain.jsonl", plain)

	if out, stderr, err := runCmd(t, nil, "", "import", "--db", viaImport, hf); err != nil || !strings.Contains(out, "5 incidents") {
		t.Fatalf("import --db: %v %s %s", err, out, stderr)
	}
	if out, stderr, err := runCmd(t, nil, "", "history", "import", "--db", viaHistory, hf); err != nil {
		t.Fatalf("history import: %v %s %s", err, out, stderr)
	}
	a, _, _ := runCmd(t, nil, "", "export", "--history", "--db", viaImport)
	b, _, _ := runCmd(t, nil, "", "export", "--history", "--db", viaHistory)
	if a != hist || b != hist {
		t.Fatal("import --db and history import of a history export differ from it or from each other")
	}
	if out, _, err := runCmd(t, nil, "", "check", "--db", viaImport); err != nil {
		t.Fatalf("check: %s", out)
	}

	t.Run("Conflict", func(t *testing.T) {
		_, stderr, err := runCmd(t, nil, "", "import", "--db", viaImport, hf)
		if err == nil || !strings.Contains(err.Error()+stderr, "IL-") {
			t.Fatalf("a second import of the same ids: %v %s", err, stderr)
		}
		if again, _, _ := runCmd(t, nil, "", "export", "--history", "--db", viaImport); again != hist {
			t.Fatal("a refused import wrote")
		}
	})
	t.Run("Directory", func(t *testing.T) {
		sub := filepath.Join(dir, "histories")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "h.jsonl"), []byte(hist), 0o600); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "dir.db")
		if out, stderr, err := runCmd(t, nil, "", "import", "--db", db, sub); err != nil || !strings.Contains(out, "5 incidents") {
			t.Fatalf("%v %s %s", err, out, stderr)
		}
		if got, _, _ := runCmd(t, nil, "", "export", "--history", "--db", db); got != hist {
			t.Fatal("import --db DIR of a history export differs from it")
		}
	})
	t.Run("Server", func(t *testing.T) {
		live := filepath.Join(dir, "live.db")
		t.Run("Import", func(t *testing.T) {
			base := serveInProcess(t, live) // stops when this subtest ends
			out, stderr, err := runCmd(t, map[string]string{"INCIDENTLIB_TOKEN": crashToken}, "", "import", "--server", base, hf)
			if err != nil || !strings.Contains(out, "5 incidents") {
				t.Fatalf("import --server: %v %s %s", err, out, stderr)
			}
		})
		if got, _, _ := runCmd(t, nil, "", "export", "--history", "--db", live); got != hist {
			t.Fatal("import --server of a history export differs from it")
		}
	})
	// The mixed inputs: nothing may be written to a new store.
	lines := strings.SplitAfter(strings.TrimSpace(plain), "\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"MixedFile", []string{write("mixed.jsonl", hist+lines[0])}, "line 6"},
		{"MixedFileRecordFirst", []string{write("mixed2.jsonl", lines[0]+hist)}, "line 2"},
		{"HistoryAndRecordFiles", []string{hf, pf}, "separately"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, err := runCmd(t, nil, "", append([]string{"import", "--db", empty}, c.args...)...)
			if err == nil || !strings.Contains(err.Error()+stderr, c.want) {
				t.Fatalf("want a refusal naming %q: %v %s", c.want, err, stderr)
			}
			if _, err := os.Stat(empty); err == nil {
				if out, _, _ := runCmd(t, nil, "", "export", "--history", "--db", empty); strings.TrimSpace(out) != "" {
					t.Fatalf("a refused import wrote: %s", out)
				}
			}
		})
	}
}
