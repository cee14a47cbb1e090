package incidentlib_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRootHoldsTheDomain keeps the root package to the domain (docs/design.md,
// "Packages"): at most 4,000 lines of non-test Go, and no reflection (the
// record codec's walks are iljson's).
func TestRootHoldsTheDomain(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
		f, err := parser.ParseFile(fset, name, b, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "reflect" {
				t.Errorf("%s imports reflect: the codec's walks belong to iljson", name)
			}
		}
	}
	if lines > 4000 {
		t.Errorf("the root holds %d lines of non-test Go, more than 4,000: move what is not types, interfaces, validation or errors to the package that uses it", lines)
	}
}
