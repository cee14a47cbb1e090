package cluster

import (
	"strconv"
	"testing"
)

// The glossary's writes need rule set 4, the imports of a history rule
// set 3, the other admin's writes rule set 2, the others rule set 1: a node of an older rule set stops at the
// first write of a newer one (instead of refusing it as unknown, which
// would make it diverge) and applies everything else.
func TestRuleSetOfEachOp(t *testing.T) {
	for op, want := range map[Op]int{
		OpUpsert: 1, OpDelete: 1, OpRestore: 1, OpSubmit: 1, OpDecide: 1, OpWithdraw: 1, OpPurge: 1,
		OpImport: 1, OpImportChunk: 1, OpImportCommit: 1,
		OpTokenCreate: 2, OpTokenRevoke: 2, OpTermAdd: 2, OpTermUpdate: 2, OpTermAliases: 2, OpTermDeprecate: 2,
		OpOrgAdd: 2, OpOrgRename: 2, OpOrgMerge: 2,
		OpHistoryImport: 3, OpHistoryChunk: 3, OpHistoryCommit: 3,
		OpGlossaryAdd: 4, OpGlossaryUpdate: 4, OpGlossaryRemove: 4,
	} {
		h := header(op)
		if got := h.Get(HeaderRules); got != strconv.Itoa(want) {
			t.Errorf("%s carries rule set %s, want %d", op, got, want)
		}
		if want > RulesVersion {
			t.Errorf("%s needs rule set %d, above this node's %d", op, want, RulesVersion)
		}
		if got := h.Get(HeaderFormat); got != strconv.Itoa(FormatVersion) {
			t.Errorf("%s carries format %s", op, got)
		}
	}
}
