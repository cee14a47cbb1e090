package incidentlib

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReservedAuthorsComplete parses the package for its author name
// constants (Author*, *Author) and checks that no token may take one, in
// any case: a new author of the program's own writes cannot be forgotten.
func TestReservedAuthorsComplete(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
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
