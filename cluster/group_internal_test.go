package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// Every write of the log is either grouped (applied with the writes
// around it in one transaction, group.go) or applied alone, by decision:
// the table names each Op of message.go, so a new one fails here until
// it is placed. A grouped write must be one the store runs as a mutation
// (storage/loggroup.go): another would break every group it is in.
func TestGroupedOps(t *testing.T) {
	want := map[Op]bool{
		OpUpsert: true, OpDelete: true, OpRestore: true, OpSubmit: true, OpDecide: true, OpWithdraw: true,
		OpImportChunk: true, OpHistoryChunk: true, // write nothing but the position
		OpPurge: false, OpImport: false, OpImportCommit: false, OpHistoryImport: false, OpHistoryCommit: false,
		OpTokenCreate: false, OpTokenRevoke: false, OpTermAdd: false, OpTermUpdate: false, OpTermAliases: false,
		OpTermDeprecate: false, OpOrgAdd: false, OpOrgRename: false, OpOrgMerge: false,
		OpGlossaryAdd: false, OpGlossaryUpdate: false, OpGlossaryRemove: false,
	}
	f, err := parser.ParseFile(token.NewFileSet(), "message.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Op" {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok {
			return true
		}
		v, _ := strconv.Unquote(lit.Value)
		found++
		g, ok := want[Op(v)]
		if !ok {
			t.Errorf("the write %s (%q) is neither grouped nor alone: place it in this table and in grouped (group.go)", vs.Names[0].Name, v)
			return true
		}
		if grouped(Op(v)) != g {
			t.Errorf("grouped(%s) = %v, want %v", vs.Names[0].Name, grouped(Op(v)), g)
		}
		return true
	})
	if found != len(want) {
		t.Errorf("message.go declares %d writes, the table names %d", found, len(want))
	}
}
