package citation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var work = Work{ID: "IL-0213", Title: `{50% off} & $5_x #1 \ a~b^c`, Organization: "Example & Co", Date: "2019-07-02",
	Version: 3, URL: "https://incidents.example.org/api/v1/incidents/IL-0213", Lang: "en",
	Accessed: time.Date(2026, 12, 3, 23, 59, 0, 0, time.FixedZone("KST", 9*3600))}

// TestBibTeXText: every special character of LaTeX is escaped so that it
// reads as itself, braces as commands (BibTeX counts \{ as a brace), line
// breaks and control characters as spaces, Korean as it is.
func TestBibTeXText(t *testing.T) {
	for in, want := range map[string]string{
		`a{b}c`:       `a\textbraceleft{}b\textbraceright{}c`,
		`100% & more`: `100\% \& more`,
		`$x_1 #2`:     `\$x\_1 \#2`,
		`a\b`:         `a\textbackslash{}b`,
		`~^`:          `\textasciitilde{}\textasciicircum{}`,
		"one\ntwo\t3": "one two 3",
		"결제 장애":       "결제 장애",
	} {
		if got := BibTeXText(in); got != want {
			t.Errorf("BibTeXText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBibTeXURL: what BibTeX would not read as written is percent-encoded,
// nothing else.
func TestBibTeXURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://a.example/lib/api/v1/incidents/IL-0001": "https://a.example/lib/api/v1/incidents/IL-0001",
		"http://h{x}/a b\\c":                             "http://h%7Bx%7D/a%20b%5Cc",
		"http://h/%41?":                                  "http://h/%41?",
		"http://é/":                                      "http://%C3%A9/",
	} {
		if got := BibTeXURL(in); got != want {
			t.Errorf("BibTeXURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBibTeX: the entry's fields, the access date in UTC (the next day's
// in Korea is still the 3rd in UTC), the key stable and safe.
func TestBibTeX(t *testing.T) {
	got := BibTeX(work)
	want := `@misc{IL-0213,
  author = {{Example \& Co}},
  title = {{\textbraceleft{}50\% off\textbraceright{} \& \$5\_x \#1 \textbackslash{} a\textasciitilde{}b\textasciicircum{}c}},
  date = {2019-07-02},
  year = {2019},
  month = jul,
  url = {https://incidents.example.org/api/v1/incidents/IL-0213},
  urldate = {2026-12-03},
  version = {3},
  language = {english},
  note = {Incident IL-0213, version 3; accessed 2026-12-03},
}
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if k := BibTeXKey("IL-0213 {x},%"); k != "IL-0213x" {
		t.Errorf("key %q", k)
	}
	undated := work
	undated.Date, undated.Title, undated.Lang = "", "", ""
	b := BibTeX(undated)
	if strings.Contains(b, "year =") || strings.Contains(b, "language =") || !strings.Contains(b, "title = {{IL-0213}}") {
		t.Errorf("undated, untitled:\n%s", b)
	}
}

// TestCSLJSON: one item with every field, UTF-8 and & as they are.
func TestCSLJSON(t *testing.T) {
	w := work
	w.Title, w.Lang = "결제 & 정산 장애", "ko"
	s, err := CSLJSON(w)
	if err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	if err := json.Unmarshal([]byte(s), &items); err != nil || len(items) != 1 {
		t.Fatalf("%v\n%s", err, s)
	}
	it := items[0]
	b, _ := json.Marshal(it)
	want := `{"URL":"https://incidents.example.org/api/v1/incidents/IL-0213","accessed":{"date-parts":[[2026,12,3]]},"author":[{"literal":"Example \u0026 Co"}],"id":"IL-0213","issued":{"date-parts":[[2019,7,2]]},"language":"ko","number":"IL-0213","title":"결제 \u0026 정산 장애","type":"report","version":"3"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if !strings.Contains(s, `"title": "결제 & 정산 장애"`) {
		t.Errorf("not as written:\n%s", s)
	}
}

// BenchmarkCitation is what graph.CitationCost prices: one citation of
// an incident in each style.
func BenchmarkCitation(b *testing.B) {
	b.Run("BIBTEX", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = BibTeX(work)
		}
	})
	b.Run("CSL_JSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CSLJSON(work); err != nil {
				b.Fatal(err)
			}
		}
	})
}
