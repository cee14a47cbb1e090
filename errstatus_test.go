package incidentlib

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestErrorCodeTable parses error.go and checks that every E* constant has
// an entry in the one table, and that the HTTP status and close code its
// comment documents are the table's: a new code cannot be forgotten, and
// the documentation cannot drift from what the transports answer.
func TestErrorCodeTable(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "error.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	httpRe := regexp.MustCompile(`HTTP (\d{3})`)
	closeRe := regexp.MustCompile(`close code (\d{4})`)
	seen := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "E") || len(vs.Values) <= i {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				code, _ := strconv.Unquote(lit.Value)
				seen[code] = true
				t.Run(name.Name, func(t *testing.T) {
					st, ok := StatusOf(code)
					if !ok {
						t.Fatalf("%s (%s) has no entry in codeStatuses", name.Name, code)
					}
					doc := vs.Doc.Text()
					m := httpRe.FindStringSubmatch(doc)
					if m == nil {
						t.Fatalf("the comment of %s documents no HTTP status (\"HTTP nnn\")", name.Name)
					}
					if want, _ := strconv.Atoi(m[1]); st.HTTP != want || HTTPStatus(code) != want {
						t.Fatalf("%s: the table says HTTP %d, the comment %d", name.Name, st.HTTP, want)
					}
					want := 0
					if m := closeRe.FindStringSubmatch(doc); m != nil {
						want, _ = strconv.Atoi(m[1])
					}
					if st.Close != want {
						t.Fatalf("%s: the table says close code %d, the comment %d", name.Name, st.Close, want)
					}
				})
			}
		}
	}
	for _, c := range Codes() {
		if !seen[c] {
			t.Errorf("the table has %s, which is no E* constant of error.go", c)
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found %d codes in error.go: the parse is wrong", len(seen))
	}
	if HTTPStatus("NO_SUCH_CODE") != 500 {
		t.Fatal("a code outside the table is not 500")
	}
}
