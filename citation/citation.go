// Package citation formats citations of incidents: a BibTeX entry and a
// CSL-JSON item (docs/graph.md, "Citations"). It imports the standard
// library alone; the GraphQL field Incident.citation fills a Work.
package citation

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Work is what a citation names: one incident as the library serves it.
type Work struct {
	// ID is the incident's id (IL-0213): the BibTeX key and the CSL id.
	ID string
	// Title is the title in Lang (the other language's when the record
	// has none in the one asked); empty: the id stands for it.
	Title string
	// Organization is the affected organization's name, the author (a
	// literal name: an organization is not a person).
	Organization string
	// Date is the incident's date, YYYY-MM-DD; empty (or not a date) when
	// the record gives none: the citation then has no issued date.
	Date string
	// Version is the incident's version, counted from 1.
	Version int
	// URL is the incident's address in the library, absolute.
	URL string
	// Lang is the title's language, "en" or "ko" (BCP 47).
	Lang string
	// Accessed is the access date (only its UTC day is written).
	Accessed time.Time
}

// title is the title, or the id when there is none.
func (w Work) title() string {
	if w.Title != "" {
		return w.Title
	}
	return w.ID
}

// date is the incident's date, if it is one.
func (w Work) date() (time.Time, bool) {
	d, err := time.Parse(time.DateOnly, w.Date)
	return d, err == nil
}

// bibMonths are BibTeX's month macros.
var bibMonths = [...]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}

// bibLanguages are the language names BibTeX styles (babel) know.
var bibLanguages = map[string]string{"en": "english", "ko": "korean"}

// BibTeX returns a @misc entry for w, keyed by its id: author (the
// organization, in braces as one name), title (in double braces, so that
// styles keep its case), date, year and month when the incident is dated,
// url, urldate, version, language and a note naming the id, the version
// and the access date. Text is escaped for LaTeX (BibTeXText) and kept in
// UTF-8, Korean included; the URL is percent-encoded where BibTeX would
// not read it as written (BibTeXURL).
func BibTeX(w Work) string {
	var b strings.Builder
	accessed := w.Accessed.UTC().Format(time.DateOnly)
	field := func(name, value string) {
		b.WriteString("  ")
		b.WriteString(name)
		b.WriteString(" = ")
		b.WriteString(value)
		b.WriteString(",\n")
	}
	b.WriteString("@misc{")
	b.WriteString(BibTeXKey(w.ID))
	b.WriteString(",\n")
	if w.Organization != "" {
		field("author", "{{"+BibTeXText(w.Organization)+"}}")
	}
	field("title", "{{"+BibTeXText(w.title())+"}}")
	if d, ok := w.date(); ok {
		field("date", "{"+d.Format(time.DateOnly)+"}")
		field("year", "{"+strconv.Itoa(d.Year())+"}")
		field("month", bibMonths[d.Month()-1])
	}
	field("url", "{"+BibTeXURL(w.URL)+"}")
	field("urldate", "{"+accessed+"}")
	field("version", "{"+strconv.Itoa(w.Version)+"}")
	if l, ok := bibLanguages[w.Lang]; ok {
		field("language", "{"+l+"}")
	}
	field("note", "{Incident "+BibTeXText(w.ID)+", version "+strconv.Itoa(w.Version)+"; accessed "+accessed+"}")
	b.WriteString("}\n")
	return b.String()
}

// BibTeXKey is the entry key of id: its letters, digits and - _ : .
// (the characters every BibTeX reader takes in a key), each other
// character dropped; "incident" when none is left.
func BibTeXKey(id string) string {
	k := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_:.", r):
			return r
		}
		return -1
	}, id)
	if k == "" {
		return "incident"
	}
	return k
}

// bibEscapes are LaTeX's special characters as text. Braces are written
// as commands, not \{ and \}: BibTeX counts every brace, escaped or not,
// when it finds where a value ends.
var bibEscapes = strings.NewReplacer(
	`\`, `\textbackslash{}`,
	`{`, `\textbraceleft{}`,
	`}`, `\textbraceright{}`,
	`%`, `\%`,
	`&`, `\&`,
	`$`, `\$`,
	`#`, `\#`,
	`_`, `\_`,
	`~`, `\textasciitilde{}`,
	`^`, `\textasciicircum{}`,
)

// BibTeXText escapes s for a BibTeX value: LaTeX's special characters as
// text (bibEscapes), control characters and line breaks as one space;
// everything else, non-ASCII letters included, as it is (UTF-8, which
// biber and modern LaTeX read).
func BibTeXText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	return bibEscapes.Replace(s)
}

// BibTeXURL percent-encodes the bytes of u that are not characters a URL
// holds as written (RFC 3986's unreserved and reserved characters and %):
// braces, backslashes, spaces, quotes, control characters and non-ASCII.
// biblatex reads url verbatim, so nothing else is escaped.
func BibTeXURL(u string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		if c > 0x20 && c < 0x7f && !strings.ContainsRune("{}\\\"<>^`|", rune(c)) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// cslItem is a CSL-JSON item (the CSL data schema, csl-data.json), in the
// order written.
type cslItem struct {
	ID       string    `json:"id"`
	Type     string    `json:"type"`
	Title    string    `json:"title"`
	Author   []cslName `json:"author,omitempty"`
	Issued   *cslDate  `json:"issued,omitempty"`
	Accessed cslDate   `json:"accessed"`
	URL      string    `json:"URL"`
	Number   string    `json:"number"`
	Version  string    `json:"version"`
	Language string    `json:"language,omitempty"`
}

type cslName struct {
	Literal string `json:"literal"`
}

type cslDate struct {
	DateParts [][]int `json:"date-parts"`
}

func cslDateOf(t time.Time) cslDate {
	return cslDate{DateParts: [][]int{{t.Year(), int(t.Month()), t.Day()}}}
}

// CSLJSON returns w as CSL-JSON: an array of one item of type report, with
// its id, title, author (the organization as a literal name), issued (the
// incident's date, when dated), accessed, URL, number (the id), version
// and language, indented by two spaces.
func CSLJSON(w Work) (string, error) {
	it := cslItem{ID: w.ID, Type: "report", Title: w.title(), Accessed: cslDateOf(w.Accessed.UTC()),
		URL: w.URL, Number: w.ID, Version: strconv.Itoa(w.Version), Language: w.Lang}
	if w.Organization != "" {
		it.Author = []cslName{{Literal: w.Organization}}
	}
	if d, ok := w.date(); ok {
		issued := cslDateOf(d)
		it.Issued = &issued
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // & < > as they are: the text is pasted, not put in HTML
	enc.SetIndent("", "  ")
	if err := enc.Encode([]cslItem{it}); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
