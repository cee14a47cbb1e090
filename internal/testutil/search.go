package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/storage"
)

// OpenSearch opens the full-text index of db's incidents in a temporary
// directory, as serve does, and closes it when the test ends.
func OpenSearch(tb testing.TB, db *storage.DB) *search.Index {
	tb.Helper()
	idx, err := search.Open(context.Background(), db.Incidents(), filepath.Join(tb.TempDir(), "search"), search.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { idx.Close() })
	return idx
}

// BuildBinary builds the program of the package in dir (such as
// ../cmd/incidentlib) into a temporary directory and returns its path;
// without the race detector, since the tests that run it are about the
// process.
func BuildBinary(tb testing.TB, dir string) string {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("no go command to build the binary with")
	}
	bin := filepath.Join(tb.TempDir(), "incidentlib")
	args := []string{"build", "-o", bin}
	if os.Getenv("INCIDENTLIB_TEST_RACE") == "1" {
		// The processes a test starts, built with the race detector: a
		// data race in one ends it with the race's report on its stderr.
		args = append(args, "-race")
	}
	if out, err := exec.Command(goBin, append(args, dir)...).CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
