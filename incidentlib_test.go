package incidentlib_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
)

func TestParseID(t *testing.T) {
	for id, want := range map[string]bool{
		"IL-0213": true, "IL-0001": true, "IL-12345": true, "IL-4294967295": true,
		"IL-213": false, "IL-00213": false, "IL-4294967296": false, "il-0213": false, "IL-": false, "IL-12a4": false, "": false,
	} {
		n, ok := incidentlib.ParseID(id)
		if ok != want {
			t.Errorf("ParseID(%q) = %v, want %v", id, ok, want)
		}
		if ok && incidentlib.FormatID(n) != id {
			t.Errorf("FormatID(ParseID(%q)) = %q", id, incidentlib.FormatID(n))
		}
	}
}

// FuzzParseID: ParseID accepts exactly the canonical ids a strconv-based
// reading accepts, with the same number, and FormatID gives them back.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"IL-0213", "IL-12345", "IL-4294967295", "IL-4294967296", "IL-9999999999", "IL-00213", "IL-+123", "IL-1_234", "IL-12a4", "IL-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n, ok := incidentlib.ParseID(id)
		var want uint64
		digits, found := strings.CutPrefix(id, "IL-")
		wantOK := found && len(digits) >= 4 && len(digits) <= 10 && !(len(digits) > 4 && digits[0] == '0')
		if wantOK {
			v, err := strconv.ParseUint(digits, 10, 64)
			wantOK = err == nil && v <= incidentlib.MaxIDNumber
			want = v
		}
		if ok != wantOK || ok && uint64(n) != want {
			t.Fatalf("ParseID(%q) = %d, %v; want %d, %v", id, n, ok, want, wantOK)
		}
		if ok && incidentlib.FormatID(n) != id {
			t.Fatalf("FormatID(ParseID(%q)) = %q", id, incidentlib.FormatID(n))
		}
	})
}

func TestParseDuration(t *testing.T) {
	for s, ok := range map[string]bool{"73h": true, "45m": true, "2h30m": true, "90s": true, "3d": true, "3 hours": false, "-5m": false, "": false} {
		if _, err := incidentlib.ParseDuration(s); (err == nil) != ok {
			t.Errorf("ParseDuration(%q): %v", s, err)
		}
	}
}

func TestCanonicalJSONIsStable(t *testing.T) {
	in := `{"url":"https://x.example/a","id":"IL-0001","org":"A","org_slug":"a","title":{"ko":"제목","en":"t","ja":"題"},"zz":1,"aa":{"k":[1, 2]},"timeline":{"resolved_after":"1h","note":"n"}}`
	recs, err := importer.ReadRecords("f", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(recs[0].Incident)
	recs2, err := importer.ReadRecords("f", a)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(recs2[0].Incident)
	if !bytes.Equal(a, b) {
		t.Fatalf("not stable:\n%s\n%s", a, b)
	}
	for _, want := range []string{`"ja":"題"`, `"zz":1`, `"aa":{"k":[1,2]}`, `"note":"n"`, `"recurrence_of":null`, `"related":[]`} {
		if !bytes.Contains(a, []byte(want)) {
			t.Errorf("canonical form lacks %s: %s", want, a)
		}
	}
}

func TestValidateNamesFields(t *testing.T) {
	inc := &incidentlib.Incident{ID: "IL-0001", Org: "A", OrgSlug: "Not A Slug", Title: incidentlib.Text{En: strings.Repeat("x", incidentlib.MaxTitleLen+1)},
		Date: "2020-02-30", Sources: []incidentlib.Source{{URL: "ftp://x"}}, Related: []string{"IL-0001"}}
	fields := map[string]bool{}
	for _, e := range incidentlib.ErrorList(inc.Validate()) {
		if e.Code != incidentlib.EINVALID {
			t.Errorf("code %s", e.Code)
		}
		fields[strings.Join(e.Field, ".")] = true
	}
	for _, f := range []string{"org_slug", "title.en", "date", "sources.0.url", "related.0"} {
		if !fields[f] {
			t.Errorf("no error for %s: %v", f, fields)
		}
	}
}

func TestKnownMembers(t *testing.T) {
	if k := incidentlib.KnownMembers(incidentlib.Text{}); !k["en"] || !k["ko"] || len(k) != 2 {
		t.Errorf("Text: %v", k)
	}
	if k := incidentlib.KnownMembers(&incidentlib.Incident{}); !k["recurrence_of"] || k["extra"] {
		t.Errorf("Incident: %v", k)
	}
	if incidentlib.KnownMembers(42) != nil {
		t.Error("an int has known members")
	}
}
