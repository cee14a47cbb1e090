package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// Every hand-written GraphQL enum (here and in the root package), and
// every enum bound to a domain type through an UnmarshalX function, reads
// its value through the one incidentlib.UnmarshalEnum, so that a value the
// GraphQL validation lets through (it compares a variable's enum names
// case-insensitively) is refused as the client's error (EINVALID), never
// as INTERNAL; and that rule refuses a wrong case and a non-string.
func TestEveryEnumUnmarshalsThroughUnmarshalEnum(t *testing.T) {
	var e Lang
	for _, v := range []any{"en", "EN ", 1, nil} {
		if err := e.UnmarshalGQL(v); incidentlib.ErrorCode(err) != incidentlib.EINVALID || e != "" {
			t.Errorf("UnmarshalGQL(%#v): %v (code %s), value %q; want EINVALID and no value", v, err, incidentlib.ErrorCode(err), e)
		}
	}
	if err := e.UnmarshalGQL("EN"); err != nil || e != LangEn {
		t.Fatalf("UnmarshalGQL(EN): %v, %q", err, e)
	}
	fset := token.NewFileSet()
	n := 0
	for _, dir := range []string{".", "../.."} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") || filepath.Base(path) == "models_gen.go" {
				continue // gqlgen's own enums are generated
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				// An enum's UnmarshalGQL, or the UnmarshalX function
				// gqlgen.yml binds an enum of the domain's type to.
				if !ok || fn.Name.Name != "readEnum" && ((fn.Recv == nil) == (fn.Name.Name == "UnmarshalGQL") || fn.Recv == nil && !strings.HasPrefix(fn.Name.Name, "Unmarshal") || notEnums[fn.Name.Name]) {
					continue
				}
				n++
				calls := false
				ast.Inspect(fn.Body, func(x ast.Node) bool {
					if c, ok := x.(*ast.CallExpr); ok {
						switch fun := c.Fun.(type) {
						case *ast.Ident: // readEnum is checked as one of them
							calls = calls || fun.Name == "UnmarshalEnum" || fun.Name == "readEnum" && fn.Name.Name != "readEnum"
						case *ast.SelectorExpr:
							calls = calls || fun.Sel.Name == "UnmarshalEnum"
						}
					}
					return true
				})
				if !calls {
					t.Errorf("%s: %s does not go through incidentlib.UnmarshalEnum", fset.Position(fn.Pos()), fn.Name.Name)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d enum readers, want the enums of graph/model and of the root", n)
	}
}

// notEnums are the Unmarshal functions that read no enum.
var notEnums = map[string]bool{
	"UnmarshalEnum": true, // the rule itself
	"UnmarshalJSON": true, // the JSON scalar (model.go)
}
