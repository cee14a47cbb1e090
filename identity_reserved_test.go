package incidentlib

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReservedAuthorsComplete parses the package for its author name
// constants (Author*, *Author) and checks that no token may take one, in
// any case: a new author of the program's own writes cannot be forgotten.
func TestReservedAuthorsComplete(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		{
			ast.Inspect(f, func(n ast.Node) bool {
				vs, ok := n.(*ast.ValueSpec)
				if !ok {
					return true
				}
				for i, name := range vs.Names {
					if !(strings.HasPrefix(name.Name, "Author") || strings.HasSuffix(name.Name, "Author")) || len(vs.Values) <= i {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					found++
					for _, s := range []string{v, strings.ToUpper(v)} {
						if ValidTokenName(s) == "" {
							t.Errorf("a token may be named %q, the author %s of the program's own writes", s, name.Name)
						}
					}
				}
				return true
			})
		}
	}
	if found < 4 {
		t.Fatalf("found %d author constants: the parse is wrong", found)
	}
	if ValidTokenName(BootstrapAdmin.Name) == "" {
		t.Error("a token may be named as the bootstrap admin")
	}
}
