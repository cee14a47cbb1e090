package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// streamAll streams one file and returns its records and problems.
func streamAll(t *testing.T, s *Streamer, path string, data []byte) ([]Record, []Problem) {
	t.Helper()
	var recs []Record
	var probs []Problem
	err := s.Stream(path, bytes.NewReader(data), func(r Record, _ int) error {
		recs = append(recs, r)
		return nil
	}, func(p Problem) { probs = append(probs, p) })
	if err != nil {
		t.Fatal(err)
	}
	return recs, probs
}

// TestStreamMatchesLoad: streaming an IL-JSON file gives the records Load
// gives, and a problem at the same place for every bad record.
func TestStreamMatchesLoad(t *testing.T) {
	opts := Options{Taxonomy: mustTaxonomy(t), Now: fixedNow}
	files, _ := filepath.Glob("testdata/iljson/*/*")
	var lines, array bytes.Buffer
	array.WriteString("[\n")
	for i := range 200 {
		rec := fmt.Sprintf(`{"id":%q,"org":"Acme","org_slug":"acme","title":{"en":"t%d"},"related":[%q]}`,
			incidentlib.FormatID(uint32(i+1)), i, incidentlib.FormatID(uint32(200-i)))
		if i == 150 {
			rec = `{"id":"IL-0151","org":"Acme","Org":"x","org_slug":"acme","title":{"en":"t"}}`
		}
		if i == 170 {
			rec = `{"id":"IL-0171","org":"Acme","org":"Acme","org_slug":"acme","title":{"en":"t"}}`
		}
		lines.WriteString(rec + "\n")
		if i > 0 {
			array.WriteString(",\n")
		}
		array.WriteString("  " + rec)
	}
	array.WriteString("\n]\n")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "many.jsonl"), lines.Bytes(), 0o600)
	os.WriteFile(filepath.Join(dir, "many.json"), array.Bytes(), 0o600)
	os.WriteFile(filepath.Join(dir, "trailing.json"), append(array.Bytes(), "x\n"...), 0o600)
	os.WriteFile(filepath.Join(dir, "bom.jsonl"), append([]byte("\xef\xbb\xbf\n\n"), lines.Bytes()...), 0o600)
	more, _ := filepath.Glob(filepath.Join(dir, "*"))
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("only %d files", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Load([]string{path}, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, probs := streamAll(t, NewStreamer(opts, 0), path, data)
			if len(got) != len(want.Records) {
				t.Fatalf("%d records streamed, %d loaded; problems %v / %v", len(got), len(want.Records), probs, want.Problems)
			}
			for i := range got {
				a, _ := json.Marshal(got[i].Incident)
				b, _ := json.Marshal(want.Records[i].Incident)
				if !bytes.Equal(a, b) || got[i].Where != want.Records[i].Where {
					t.Fatalf("record %d: %s at %s, loaded %s at %s", i, a, got[i].Where, b, want.Records[i].Where)
				}
			}
			if len(probs) != len(want.Problems) {
				t.Fatalf("problems: streamed %v, loaded %v", probs, want.Problems)
			}
			// Load lists a file's parse problems before its check
			// problems; Stream lists them in file order.
			byKey := func(p []Problem) {
				sort.Slice(p, func(i, j int) bool { return p[i].ID+p[i].Reason < p[j].ID+p[j].Reason })
			}
			byKey(probs)
			byKey(want.Problems)
			for i := range probs {
				// Whole-file problems may be placed a line apart; the
				// reason and record are the same.
				if probs[i].ID != want.Problems[i].ID || !sameReason(probs[i].Reason, want.Problems[i].Reason) {
					t.Errorf("problem %d: streamed %v, loaded %v", i, probs[i], want.Problems[i])
				}
			}
			// The second pass sees the same records.
			s := NewStreamer(opts, 0)
			s.DecodeOnly = true
			again, _ := streamAll(t, s, path, data)
			if len(again) < len(got) {
				t.Fatalf("decode-only: %d records, %d checked", len(again), len(got))
			}
		})
	}
}

func sameReason(a, b string) bool {
	cut := func(s string) string {
		if i := strings.Index(s, " at byte offset"); i >= 0 {
			return s[:i]
		}
		return s
	}
	return cut(a) == cut(b)
}

// TestFastChecksAgree: the fast path never passes what the full checks
// refuse (the duplicate-key scan's half: iljson's TestMayRepeatKeys).
func TestFastChecksAgree(t *testing.T) {
	inc := &incidentlib.Incident{Extra: incidentlib.Extra{"Title": json.RawMessage(`"x"`)}}
	if !caseSuspect(inc) {
		t.Error("Title beside title passed the case check")
	}
	inc = &incidentlib.Incident{Summary: incidentlib.Text{Extra: incidentlib.Extra{"EN": json.RawMessage(`"x"`)}}}
	if !caseSuspect(inc) {
		t.Error("summary.EN passed the case check")
	}
	if caseSuspect(&incidentlib.Incident{Extra: incidentlib.Extra{"notes": json.RawMessage(`"x"`)}}) {
		t.Error("an unknown member was taken for a case mismatch")
	}
	_ = reflect.DeepEqual
}
