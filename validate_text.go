package incidentlib

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The text rules of a record: valid UTF-8, lengths, and no control
// characters (tab and line breaks only in multi-line text).

// checkText checks both languages of a text, and the other languages it
// carries in Extra (those whose value is a JSON string): valid UTF-8, at
// most max characters, no control character (checkControls; multiLine
// allows tab and line breaks).
func checkText(p *problems, field string, t Text, max int, multiLine bool) {
	checkString(p, field+".en", t.En, max, multiLine)
	checkString(p, field+".ko", t.Ko, max, multiLine)
	for _, lang := range t.Extra.Names() {
		var s string
		if json.Unmarshal(t.Extra[lang], &s) == nil {
			checkString(p, field+"."+lang, s, max, multiLine)
		}
	}
}

// checkLine checks a one-line text field: valid UTF-8, at most max
// characters (0: no limit of its own), no control character at all.
func checkLine(p *problems, field, s string, max int) { checkString(p, field, s, max, false) }

func checkString(p *problems, field, s string, max int, multiLine bool) {
	if s == "" {
		return
	}
	if !utf8.ValidString(s) {
		p.add(RuleStructure, field, "%s is not valid UTF-8", field)
		return
	}
	if n := utf8.RuneCountInString(s); max > 0 && n > max {
		p.add(RuleStructure, field, "%s has %d characters, more than the limit of %d", field, n, max)
	}
	if at, r := controlAt(s, multiLine); at >= 0 {
		where := "one-line text: tab and line breaks are refused too"
		if multiLine {
			where = "tab and line breaks are the only control characters allowed"
		}
		p.add(RuleText, field, "%s has the control character U+%04X at character %d (%s)", field, r, utf8.RuneCountInString(s[:at])+1, where)
	}
}

// CheckComment checks a comment or a reason (of a review decision, a
// restore, a withdrawal, a purge) by the rules of multi-line text: valid
// UTF-8, at most max characters, no control character but tab and line
// breaks. It returns EINVALID about field.
func CheckComment(field, s string, max int) error {
	var p problems
	checkString(&p, field, s, max, true)
	if len(p.es) > 0 {
		return p.es[0]
	}
	return nil
}

// IsControl reports whether r is a character text fields refuse: a C0
// control (U+0000-U+001F), DEL, a C1 control (U+0080-U+009F), a
// bidirectional embedding or override (U+202A-U+202E) or isolate
// (U+2066-U+2069). Tab, line feed and a carriage return before a line
// feed are allowed in multi-line text (see controlAt).
func IsControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// controlAt returns the byte offset and rune of the first character of s
// that IsControl refuses, or -1. In multi-line text, tab, line feed and
// CR LF are allowed; a lone carriage return is not.
func controlAt(s string, multiLine bool) (int, rune) {
	for k, r := range s {
		if !IsControl(r) {
			continue
		}
		if multiLine && (r == '\t' || r == '\n' || (r == '\r' && k+1 < len(s) && s[k+1] == '\n')) {
			continue
		}
		return k, r
	}
	return -1, 0
}

// ValidateTerms checks that every term slug of the record exists in the
// taxonomy for its kind.
func (i *Incident) ValidateTerms(t *Taxonomy) error {
	var es Errors
	check := func(field string, kind TermKind, slugs ...string) {
		for n, s := range slugs {
			if s != "" && t.Term(kind, s) == nil {
				f := []string{field}
				if field != "root_cause" && field != "severity" {
					f = append(f, strconv.Itoa(n))
				}
				es = append(es, FieldErrorf(EINVALID, f, "%s %q is not a %s term of the taxonomy", field, s, kind))
			}
		}
	}
	check("domain", KindDomain, i.Domain...)
	check("symptoms", KindSymptom, i.Symptoms...)
	check("components", KindComponent, i.Components...)
	check("contributing", KindContributing, i.Contributing...)
	check("root_cause", KindRootCause, i.RootCause)
	check("severity", KindSeverity, i.Severity)
	if len(es) == 0 {
		return nil
	}
	return es
}

// Terms returns every term key the record carries.
func (i *Incident) Terms() []TermKey {
	var keys []TermKey
	add := func(kind TermKind, slugs ...string) {
		for _, s := range slugs {
			if s != "" {
				keys = append(keys, TermKey{kind, s})
			}
		}
	}
	add(KindDomain, i.Domain...)
	add(KindSymptom, i.Symptoms...)
	add(KindComponent, i.Components...)
	add(KindContributing, i.Contributing...)
	add(KindRootCause, i.RootCause)
	add(KindSeverity, i.Severity)
	return keys
}
