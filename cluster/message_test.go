package cluster

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/iljson"
	"github.com/incidentlib/incidentlib/seeds"
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

// TestDecodeWriteAsEncodingJSON: a node reads every message with
// decodeWrite (the codec's one pass), which must give what json.Unmarshal
// gives, error or not, for every kind of write and for messages the
// one-pass decoder hands back to encoding/json.
func TestDecodeWriteAsEncodingJSON(t *testing.T) {
	incs, err := gen.Generate(gen.Options{Count: 6, Seed: 32, FirstID: 1, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	incs[1].Extra = iljson.Extra{"x-later": json.RawMessage(`{"a":[1,"<b>"]}`)}
	at := time.Date(2026, 12, 4, 8, 0, 0, 123456000, time.UTC)
	when, version := "2026-12-01T00:00:00.000001Z", 3
	writes := []Write{
		{Op: OpUpsert, ID: incs[0].ID, At: at, Author: "ed", Role: "editor", Record: incs[0], ExpectedUpdatedAt: &when},
		{Op: OpUpsert, ID: incs[1].ID, At: at, Record: incs[1], ExpectedVersion: &version},
		{Op: OpDelete, ID: "IL-0002", At: at},
		{Op: OpRestore, ID: "IL-0002", Version: 2, Comment: "back <there> & \u2028"},
		{Op: OpDecide, ID: "IL-0003", Decision: incidentlib.ReviewDecision("APPROVE"), Comment: "ok"},
		{Op: OpImport, Records: incs, KeepUpdatedAt: true, OnlyIfNew: true, Merges: map[string]string{"a": "b"}},
		{Op: OpImportCommit, Chunks: []uint64{4, 5, 6}},
		{Op: OpTokenCreate, Name: "ci", TokenRole: "editor", TokenHash: []byte{1, 2, 3, 255}, Expires: at},
		{Op: OpTermAliases, Kind: incidentlib.TermKind("symptom"), Slug: "s", Aliases: []string{"x", "y"}, Deprecated: true},
		{Op: OpOrgMerge, From: "a", Into: "b"},
		{Op: OpHistoryImport, History: []byte("{\"id\":\"IL-0001\"}\n")},
		{Op: OpGlossaryRemove, GlossaryKey: "k"},
	}
	var msgs []string
	for _, w := range writes {
		data, err := w.encode()
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, string(data))
	}
	msgs = append(msgs,
		`{"op":"upsert","later_member":[1,2],"id":"IL-0001"}`, // a member this release does not know
		`{"OP":"delete","id":"IL-0001"}`,                      // another case: encoding/json matches it
		`{"op":"delete","op":"upsert"}`,                       // twice: the last wins
		`null`, `{}`, ` {"op" : "submit" , "id":"IL-0004"} `,
		`{"op":"upsert","record":null}`, `{"op":"upsert","record":{"id":1}}`, `{"op":`, `[]`, `{"op":"upsert"}x`,
		`{"op":"upsert","at":"not a time"}`, `{"op":"upsert","expected_version":"3"}`, "{\"op\":\"\xff\"}")
	for i, m := range msgs {
		var want, got Write
		werr := json.Unmarshal([]byte(m), &want)
		gerr := decodeWrite([]byte(m), &got)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("message %d: json.Unmarshal's error %v, decodeWrite's %v", i, werr, gerr)
			continue
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("message %d: decodeWrite gave\n%+v\njson.Unmarshal\n%+v", i, got, want)
		}
	}
}
