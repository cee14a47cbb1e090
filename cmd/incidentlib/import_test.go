package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

func lineCount(s string) int { return strings.Count(s, "\n") }

// TestImportCollectionsCorpus imports the public collections named by
// INCIDENTLIB_CORPUS (make test sets it to ../shared/datasets), twice.
func TestImportCollectionsCorpus(t *testing.T) {
	corpus := os.Getenv("INCIDENTLIB_CORPUS")
	if corpus == "" {
		t.Skip("INCIDENTLIB_CORPUS is not set")
	}
	if fi, err := os.Stat(corpus); err != nil || !fi.IsDir() {
		t.Fatalf("INCIDENTLIB_CORPUS=%q does not name a directory: %v", corpus, err)
	}
	db := filepath.Join(t.TempDir(), "il.db")
	dirs := []string{
		filepath.Join(corpus, "icco-postmortems"),
		filepath.Join(corpus, "dfds-postmortems"),
		filepath.Join(corpus, "macintux-service-postmortems"),
	}
	out, stderr, err := runCmd(t, nil, "", append([]string{"import", "--db", db}, dirs...)...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	t.Log(out)
	// 301 records; the five postmortems cited by both icco and macintux
	// (and one cited twice within icco) become one incident each.
	if !strings.Contains(out, "imported 301 records") || !strings.Contains(out, "merged") {
		t.Fatalf("summary: %s", out)
	}
	first, _, err := runCmd(t, nil, "", "export", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	n := lineCount(first)
	if n < 290 || n > 300 {
		t.Fatalf("%d incidents from 301 records", n)
	}
	if out, _, err := runCmd(t, nil, "", "check", "--db", db); err != nil {
		t.Fatalf("check: %s", out)
	}
	// Importing the same collections again changes nothing.
	out, _, err = runCmd(t, nil, "", append([]string{"import", "--db", db}, dirs...)...)
	if err != nil || !strings.Contains(out, " 0 incidents written") {
		t.Fatalf("re-import: %v %s", err, out)
	}
	second, _, _ := runCmd(t, nil, "", "export", "--db", db)
	if first != second {
		t.Fatal("re-import changed the export")
	}
	for _, want := range []string{`"licence":"MIT"`, `"licence":"GPL-3.0"`, `"merged_sources":[{"source_key":"macintux/`} {
		if !strings.Contains(first, want) {
			t.Errorf("the export lacks %s", want)
		}
	}
}

// TestImportDFDSIntoSeededStore: the seeds carry the DFDS collection with
// their source keys, so importing the collection updates them in place.
func TestImportDFDSIntoSeededStore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "il.db")
	tax := seeds.MustTaxonomy()
	s, err := storage.Open(db, storage.Options{Taxonomy: tax})
	if err != nil {
		t.Fatal(err)
	}
	incs, _ := seeds.Incidents()
	if _, err := s.Incidents().ImportIncidents(context.Background(), incs, importOpts()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, _, _ := runCmd(t, nil, "", "export", "--db", db)
	out, stderr, err := runCmd(t, nil, "", "import", "--db", db, filepath.Join("..", "..", "importer", "testdata", "dfds"))
	if err != nil {
		t.Fatalf("%v %s %s", err, out, stderr)
	}
	after, _, _ := runCmd(t, nil, "", "export", "--db", db)
	if lineCount(after) != lineCount(before)+countCreated(out) {
		t.Fatalf("records were duplicated: %d before, %d after; %s", lineCount(before), lineCount(after), out)
	}
	if out, _, err := runCmd(t, nil, "", "check", "--db", db); err != nil {
		t.Fatalf("check: %s", out)
	}
}

func countCreated(summary string) int {
	// "imported N records into M incidents: C created, ..."
	i := strings.Index(summary, " created")
	j := strings.LastIndex(summary[:max(i, 0)], " ")
	n := 0
	for _, c := range summary[j+1 : max(i, j+1)] {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestImportFormatsAndSkipBad(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "il.db")
	fixtures := filepath.Join("..", "..", "importer", "testdata")
	t.Run("BrokenCollectionWritesNothing", func(t *testing.T) {
		_, stderr, err := runCmd(t, nil, "", "import", "--db", db, filepath.Join(fixtures, "icco-broken"))
		if err == nil || !strings.Contains(stderr, "nothing was written") || !strings.Contains(stderr, "icco-broken") {
			t.Fatalf("%v %s", err, stderr)
		}
		if _, err := os.Stat(db); err == nil {
			out, _, _ := runCmd(t, nil, "", "export", "--db", db)
			if out != "" {
				t.Fatal("a failed import wrote records")
			}
		}
	})
	t.Run("SkipBadWritesTheGoodOnes", func(t *testing.T) {
		out, stderr, err := runCmd(t, nil, "", "import", "--db", db, "--skip-bad", filepath.Join(fixtures, "icco-broken"), filepath.Join(fixtures, "dfds"))
		if err != nil {
			t.Fatalf("%v %s", err, stderr)
		}
		if !strings.Contains(out, "skipped") || !strings.Contains(out, "created") {
			t.Fatalf("summary: %s", out)
		}
	})
	t.Run("UnknownFormatRefused", func(t *testing.T) {
		_, _, err := runCmd(t, nil, "", "import", "--db", db, "--format", "csv", fixtures)
		if err == nil || !strings.Contains(err.Error(), "--format") {
			t.Fatalf("%v", err)
		}
	})
}

func importOpts() incidentlib.ImportOptions { return incidentlib.ImportOptions{KeepUpdatedAt: true} }
