package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportMemberGrammarCLI: import --db refuses a record whose unknown
// member is reserved (a case variant of a nested known member, "history"
// at the top) and a history line that breaks the history grammar, naming
// where, and writes nothing.
func TestImportMemberGrammarCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "lib.db")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const rec = `{"id":"IL-0001","org":"Acme","org_slug":"acme","title":{"en":"t"}%s}`
	for _, c := range []struct{ name, file, want string }{
		{"TopHistoryInArray", write("a.json", "["+strings.Replace(rec, "%s", `,"history":[]`, 1)+"]"), "history"},
		{"CaseVariantInReview", write("b.json", strings.Replace(rec, "%s", `,"review":{"written_by":"x","Written_By":"ceo"}`, 1)), "Written_By"},
		{"HistoryWithoutAuthor", write("c.jsonl", `{"id":"IL-0001","history":[{"version":1,"at":"2026-03-01T09:00:00Z","author":"","action":"CREATE","record":`+strings.Replace(rec, "%s", "", 1)+`}]}`+"\n"), "version 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, err := runCmd(t, nil, "", "import", "--db", db, c.file)
			if err == nil || !strings.Contains(err.Error()+stderr+out, c.want) {
				t.Fatalf("import: %v\n%s\n%s", err, out, stderr)
			}
			if plain, _, _ := runCmd(t, nil, "", "export", "--db", db); strings.TrimSpace(plain) != "" {
				t.Fatalf("a refused import wrote: %s", plain)
			}
		})
	}
}
