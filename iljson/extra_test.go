package iljson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
)

// extraFieldsReference is the former extraFields, on encoding/json's
// tokenizer: the fast one must return exactly what it returns.
func extraFieldsReference(data []byte, known map[string]bool) (Extra, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("expected a JSON object")
	}
	var extra Extra
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if known[name] {
			continue
		}
		if extra == nil {
			extra = Extra{}
		}
		extra[name] = append(json.RawMessage(nil), raw...)
	}
	return extra, nil
}

var extraFieldsCases = []string{
	`{}`,
	` { } `,
	`{"en":"a","ko":"b"}`,
	`{"en":"a","ja":"題","ko":"b"}`,
	"{\n \"zz\" : 1 ,\t\"aa\":{\"k\":[1, 2, {\"x\":\"}]\\\"\"}]},\r\n\"en\":null}",
	`{"\u0065n":"escaped known key","\u00e9t\u00e9":"escaped unknown key","caf\u00e9":1}`,
	`{"été":[true,false,null,-1.5e3,"a,b}"],"n":-0.25E+2,"t":true,"f":false,"z":null}`,
	`{"dup":1,"dup":[2],"en":"x"}`,
	`{"EN":"case differs","Ko":"also"}`,
	`{"s":"\"\\\/\b\f\n\r\t\u2028"}`,
	"{\"bad utf8 \xff key\":1}",
	`{"deep":{"a":{"b":{"c":[[[{}]]]}}}}`,
	`null`,
	`[]`,
	` "x" `,
	`12`,
}

func TestExtraFieldsMatchesTokenizer(t *testing.T) {
	known := map[string]bool{"en": true, "ko": true, "n": true}
	for _, c := range extraFieldsCases {
		checkExtraFields(t, []byte(c), known)
	}
}

// FuzzExtraFields compares extraFields with the tokenizer on any JSON.
func FuzzExtraFields(f *testing.F) {
	for _, c := range extraFieldsCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			t.Skip() // callers decode the object first
		}
		checkExtraFields(t, data, map[string]bool{"en": true, "ko": true, "a": true})
	})
}

func checkExtraFields(t *testing.T, data []byte, known map[string]bool) {
	t.Helper()
	want, wantErr := extraFieldsReference(data, known)
	got, err := extraFields(data, known)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, the tokenizer's %v", data, err, wantErr)
	}
	if !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) || (got == nil) != (want == nil) {
		t.Fatalf("%q:\n got %q\nwant %q", data, got, want)
	}
}
