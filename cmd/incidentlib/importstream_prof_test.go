package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestImportProfile imports the corpus named by INCIDENTLIB_IMPORT_PROFILE
// into a new store, in-process, for a CPU profile of the import command:
//
//	incidentlib gen --count 100000 > /tmp/c.jsonl
//	INCIDENTLIB_IMPORT_PROFILE=/tmp/c.jsonl go test -run TestImportProfile -cpuprofile cpu.out ./cmd/incidentlib
func TestImportProfile(t *testing.T) {
	corpus := os.Getenv("INCIDENTLIB_IMPORT_PROFILE")
	if corpus == "" {
		t.Skip("INCIDENTLIB_IMPORT_PROFILE names no corpus")
	}
	db := filepath.Join(t.TempDir(), "profile.db")
	out, stderr, err := runCmd(t, nil, "", "import", "--db", db, corpus)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	t.Log(out)
}
