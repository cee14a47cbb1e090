package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every command that talks to a running library takes --server from
// addServerFlag, whose one rule (incidentlib.ValidHTTPURL) refuses a URL
// that is not http(s) with the same words before anything runs; and no
// file declares a --server of its own beside it.
func TestEveryServerFlagGoesThroughAddServerFlag(t *testing.T) {
	env := map[string]string{"INCIDENTLIB_TOKEN": "t"}
	for _, args := range [][]string{
		{"import", "--server", "ftp://example.com", "x.jsonl"},
		{"backup", "--server", "ftp://example.com"},
		{"seeds", "update", "--server", "ftp://example.com"},
		{"token", "list", "--server", "ftp://example.com"},
		{"mcp", "--server", "ftp://example.com"},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, _, err := runCmd(t, env, "", args...)
			if err == nil || !strings.HasPrefix(err.Error(), "--server ") || !strings.Contains(err.Error(), "http") {
				t.Fatalf("%v: %v, want addServerFlag's refusal", args, err)
			}
		})
	}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name == "addServerFlag" {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && len(c.Args) > 0 {
					if lit, ok := c.Args[0].(*ast.BasicLit); ok && lit.Value == `"server"` {
						if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name != "Lookup" {
							t.Errorf("%s: %s declares --server outside addServerFlag", fset.Position(c.Pos()), fn.Name.Name)
						}
					}
				}
				return true
			})
		}
	}
}
