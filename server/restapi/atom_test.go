package restapi

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestXMLTextDropsForbiddenCharacters(t *testing.T) {
	cases := map[string]string{
		"plain":                         "plain",
		"Korean 한국어 and emoji 🙂":        "Korean 한국어 and emoji 🙂",
		"tab\tnewline\ncr\r":            "tab\tnewline\ncr\r",
		"bell\a form\f nul\x00 esc\x1b": "bell form nul esc",
		"noncharacters \uFFFE\uFFFF":    "noncharacters ",
		"bad UTF-8 \xff\xfe end":        "bad UTF-8  end",
	}
	for in, want := range cases {
		got := xmlText(in)
		if got != want {
			t.Errorf("xmlText(%q) = %q, want %q", in, got, want)
		}
		var v struct {
			S string `xml:"s"`
		}
		doc := "<x><s>" + strings.NewReplacer("&", "&amp;", "<", "&lt;").Replace(got) + "</s></x>"
		if err := xml.Unmarshal([]byte(doc), &v); err != nil {
			t.Errorf("%q does not parse as XML text: %v", got, err)
		}
	}
}
