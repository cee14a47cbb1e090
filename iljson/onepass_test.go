package iljson_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/iljson"
	"github.com/incidentlib/incidentlib/seeds"
)

// checkOnePass fails t when the one-pass decoder reads data into another
// record than encoding/json's path, or reads what that path refuses.
func checkOnePass(t *testing.T, data []byte) bool {
	t.Helper()
	var a, b incidentlib.Incident
	ok, err := iljson.DecodeBothWays(data, &a, &b)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("one-pass decoder read what encoding/json refuses (%v):\n%s", err, data)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("one-pass decoder differs from encoding/json:\n%#v\n%#v\n%s", a, b, data)
	}
	return true
}

var onePassCases = []string{
	`{}`,
	` {"id":"IL-0001"} `,
	`{"id":"IL-0001","title":{"en":"a\"b\\c\/\u00e9\ud83d\ude00\n","ko":"가","fr":"x"},"zz":[1,{"a":null}],"docs":[null,{"k":[1.5e3,-0,true]}]}`,
	`{"title":null,"impact":null,"review":{"written_by":null,"x":1},"text_origin":null,"organization_roles":[{"org":"A","org_slug":"a","role":"VENDOR","q":2}]}`,
	`{"domain":null,"symptoms":[],"sources":[{"url":"https://x","kind":null,"archived":"a"}],"remediation":[{"text":{"en":"x"}}]}`,
	`{"date":null,"root_cause":"x","timeline":{"detected_after":"3h","resolved_after":null}}`,
	`{"text_origin":{"ko":"MACHINE_TRANSLATION","de":"X"}}`,
	// What it leaves to encoding/json.
	`{"ID":"IL-1"}`, `{"id":"IL-1","id":"IL-2"}`, `{"title":{"en":"\ud800"}}`, `{"title":{"en":"a"},}`,
	`{"remediation":[null]}`, `{"id":1}`, `{"x":01}`, `{"x":1.}`, `{"x":tru}`, `{"\u0069d":"IL-1"}`,
	`{"id":"IL-1"} x`, `null`, `[]`, `{"title":{"en":"` + "\xff" + `"}}`, `{"title":{"en":"a` + "\x01" + `"}}`,
	`{"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
}

func TestOnePassDecoderMatchesEncodingJSON(t *testing.T) {
	for _, c := range onePassCases {
		checkOnePass(t, []byte(c))
	}
	incs, err := gen.Generate(gen.Options{Count: 300, Seed: 5, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range incs {
		b, err := json.Marshal(inc)
		if err != nil {
			t.Fatal(err)
		}
		if !checkOnePass(t, b) {
			t.Fatalf("one-pass decoder left a canonical record to encoding/json:\n%s", b)
		}
		indented, _ := json.MarshalIndent(inc, "", "  ")
		if !checkOnePass(t, indented) {
			t.Fatalf("one-pass decoder left an indented record to encoding/json:\n%s", indented)
		}
	}
}

func FuzzOnePassDecoder(f *testing.F) {
	for _, c := range onePassCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkOnePass(t, data) })
}

// checkEncoders fails t when the one-pass encoder writes v otherwise than
// encoding/json.
func checkEncoders(t *testing.T, v any) {
	t.Helper()
	a, b, c, d, err := iljson.EncodeBothWays(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(c) || string(b) != string(d) {
		t.Fatalf("one-pass encoder differs from encoding/json:\n%s\n%s\n%s\n%s", a, c, b, d)
	}
}

func TestOnePassEncoderMatchesEncodingJSON(t *testing.T) {
	incs, err := gen.Generate(gen.Options{Count: 200, Seed: 7, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	odd := "<a & b> \u2028\u2029 \x7f \x01 \t\n\"\\ \xff é 가"
	x := json.RawMessage(`{ "h" : "<&>\u2028", "n": [1, 2] }`)
	extra := incidentlib.Extra{"zz<": x, "a": json.RawMessage(`"` + "\u2028<" + `"`)}
	for i, inc := range incs {
		checkEncoders(t, inc)
		if i%10 == 0 {
			inc.Title.En += odd
			inc.Title.Extra = extra
			inc.Summary.Ko = odd
			inc.Review.Extra = extra
			inc.Docs = append(inc.Docs, x)
			inc.Sources = append(inc.Sources, incidentlib.Source{URL: odd, Extra: extra})
			inc.TextOrigin.Extra = extra
			inc.OrganizationRoles = append(inc.OrganizationRoles, incidentlib.OrgRole{Org: odd, OrgSlug: "x", Role: "VENDOR", Extra: extra})
			checkEncoders(t, inc)
			inc.Extra = extra
			checkEncoders(t, inc)
			checkEncoders(t, &inc.Title)
		}
	}
	checkEncoders(t, &incidentlib.Incident{})
}

func FuzzOnePassEncoder(f *testing.F) {
	f.Add("a", "<b>", []byte(`{"x":1}`))
	f.Fuzz(func(t *testing.T, s1, s2 string, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		inc := &incidentlib.Incident{ID: s1, Title: incidentlib.Text{En: s1, Ko: s2, Extra: incidentlib.Extra{s2: raw}},
			Domain: []string{s1, s2}, Docs: []json.RawMessage{raw}, Review: incidentlib.Review{WrittenBy: s2}}
		checkEncoders(t, inc)
		inc.Extra = incidentlib.Extra{s1: raw}
		checkEncoders(t, inc)
	})
}
