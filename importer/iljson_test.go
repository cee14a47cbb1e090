package importer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

func TestILJSON(t *testing.T) {
	res := mustLoad(t, Options{Collection: "local"}, "testdata/iljson/good")
	if len(res.Problems) != 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	if len(res.Records) != 5 {
		t.Fatalf("got %d records, want 5", len(res.Records))
	}
	mustValidate(t, res.Records)

	t.Run("OneObject", func(t *testing.T) {
		r := record(t, res, "local/IL-0213")
		if r.Incident.ID != "IL-0213" || r.Incident.Title.Ko == "" || r.Incident.Timeline.ResolvedAfter != "73h" {
			t.Errorf("record not read as written: %+v", r.Incident)
		}
		if r.Incident.Review.WrittenBy != "session" {
			t.Errorf("written_by = %q, want the file's own value kept", r.Incident.Review.WrittenBy)
		}
		if string(r.Incident.Extra["x_local_note"]) != `{"kept": true}` && string(r.Incident.Extra["x_local_note"]) != `{"kept":true}` {
			t.Errorf("unknown field not kept: %s", r.Incident.Extra["x_local_note"])
		}
		if res.Format["testdata/iljson/good/one.json"] != FormatILJSON {
			t.Errorf("format = %q", res.Format["testdata/iljson/good/one.json"])
		}
	})
	t.Run("Array", func(t *testing.T) {
		r := record(t, res, "local/IL-0300")
		if r.Where != "testdata/iljson/good/array.json:3 [1]" {
			t.Errorf("where = %q", r.Where)
		}
		noID := record(t, res, "local/array.json:2 [0]")
		if noID.Incident.ID != "" || noID.Incident.Review.WrittenBy != "" {
			t.Errorf("record without id: id %q written_by %q", noID.Incident.ID, noID.Incident.Review.WrittenBy)
		}
	})
	t.Run("Lines", func(t *testing.T) {
		r := record(t, res, "local/IL-0401")
		if r.Where != "testdata/iljson/good/lines.jsonl:3" || r.Incident.Title.Ko != "둘째 줄" {
			t.Errorf("where %q title %+v", r.Where, r.Incident.Title)
		}
		if res.Format["testdata/iljson/good/lines.jsonl"] != FormatJSONL {
			t.Errorf("format = %q", res.Format["testdata/iljson/good/lines.jsonl"])
		}
	})
}

func TestILJSONBroken(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/iljson/broken")
	for _, p := range res.Problems {
		t.Log(p)
	}
	t.Run("DuplicateKey", func(t *testing.T) {
		p := problem(t, res, "dupkey.json:4", `duplicate key "org"`)
		if p.ID != "IL-0001" {
			t.Errorf("id = %q", p.ID)
		}
	})
	t.Run("LinesNameTheLine", func(t *testing.T) {
		problem(t, res, "lines.jsonl:2", "malformed JSON")
		p := problem(t, res, "lines.jsonl:3", "date")
		if p.ID != "IL-0012" {
			t.Errorf("id = %q", p.ID)
		}
		problem(t, res, "lines.jsonl:4", `duplicate key "en"`)
		// The good line still loads.
		found := false
		for _, r := range res.Records {
			found = found || r.Incident.ID == "IL-0010"
		}
		if !found {
			t.Error("the good line of a broken file was not loaded")
		}
	})
	t.Run("ArrayIndex", func(t *testing.T) {
		p := problem(t, res, "array.json:3 [1]", "org is required")
		if p.ID != "IL-0031" || !strings.Contains(p.Reason, "org_slug") {
			t.Errorf("problem = %v", p)
		}
		problem(t, res, "array.json:4 [2]", "not a JSON object")
	})
	t.Run("CaseOfKnownField", func(t *testing.T) {
		problem(t, res, "case.json:1", `"Title"`)
	})
	t.Run("Empty", func(t *testing.T) {
		problem(t, res, "empty.json", "empty file")
	})
	t.Run("NotUTF8", func(t *testing.T) {
		p := problem(t, res, "nonutf8.json:1", "byte offset 30")
		if !strings.Contains(p.Reason, "0xff") {
			t.Errorf("reason = %q", p.Reason)
		}
	})
	if len(res.Records) != 2 { // IL-0010 and IL-0030
		t.Errorf("got %d records, want 2", len(res.Records))
	}
}

func TestILJSONDuplicateIDs(t *testing.T) {
	data := []byte(`[{"id":"IL-0001","org":"A","org_slug":"a","title":{"en":"a"}},{"id":"IL-0001","org":"B","org_slug":"b","title":{"en":"b"}}]`)
	res, err := LoadData("dups.json", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 {
		t.Fatalf("got %d records", len(res.Records))
	}
	problem(t, res, "dups.json:1 [1]", "the same record")
}

func TestILJSONRoundTrip(t *testing.T) {
	// A record exported by the library loads back unchanged.
	inc := incidentlib.Incident{ID: "IL-0042", Org: "Example", OrgSlug: "example", Title: incidentlib.Text{En: "t", Ko: "제목"},
		Review: incidentlib.Review{WrittenBy: "session"}, Extra: incidentlib.Extra{"x": json.RawMessage(`[1,2]`)}}
	b, _ := json.Marshal(inc)
	res, err := LoadData("x.json", b, Options{})
	if err != nil || len(res.Records) != 1 {
		t.Fatalf("err %v, problems %v", err, res.Problems)
	}
	b2, _ := json.Marshal(res.Records[0].Incident)
	if string(b) != string(b2) {
		t.Errorf("round trip:\n%s\n%s", b, b2)
	}
}
