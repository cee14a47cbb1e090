package search

import (
	"html"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// snippetRunes is about how long a snippet is, marks and ellipses aside.
const snippetRunes = 200

// highlights cuts a snippet from every field of inc in which a word or
// phrase of the query matches, in field order. The matches are found by
// analyzing the record the store holds now, so they are always real; only
// the texts of the index fields in mask (where the index found the
// query's terms) are analyzed.
func highlights(a *analyzer, inc *incidentlib.Incident, c *compiled, lang incidentlib.Lang, mask uint16) []incidentlib.Highlight {
	out := []incidentlib.Highlight{}
	toks, spans := a.hlToks[:0], a.hlSpans[:0]
	forms, tforms := a.hlForms[:0], a.hlTForms[:0] // the phrases of the clauses, every form; the forms of their translations
	defer func() {
		a.hlToks, a.hlSpans = toks[:0], spans[:0]
		clear(forms[:cap(forms)])
		clear(tforms[:cap(tforms)])
		a.hlForms, a.hlTForms = forms[:0], tforms[:0]
	}()
	for i := range fields {
		f := &fields[i]
		if (lang != "" && f.lang != "" && f.lang != lang) || mask&(1<<f.index) == 0 {
			continue
		}
		text := f.text(inc)
		if text == "" {
			continue
		}
		forms, tforms = forms[:0], tforms[:0]
		for j := range c.must {
			cl := &c.must[j]
			if cl.restrict != "" && cl.restrict != f.name {
				continue
			}
			if slices.Contains(cl.fields, f.index) {
				for _, form := range cl.forms {
					if mayHold(text, form) {
						forms = append(forms, form)
					}
				}
			}
			for k, form := range cl.tforms {
				if slices.Contains(cl.tfields[k], f.index) && mayHold(text, form) {
					tforms = append(tforms, form)
				}
			}
		}
		if len(forms) == 0 && len(tforms) == 0 {
			continue
		}
		// The query's own words mark the text where they match; a
		// translation only where none does.
		spans = a.spansOf(text, forms, spans[:0], &toks)
		translated := false
		if len(spans) == 0 && len(tforms) > 0 {
			spans = a.spansOf(text, tforms, spans, &toks)
			translated = true
		}
		if len(spans) == 0 {
			continue
		}
		out = append(out, incidentlib.Highlight{Field: string(f.name), Lang: f.lang, Snippet: snippet(text, spans), Translated: translated})
	}
	return out
}

// spansOf appends to spans the bytes of every match in text of the
// phrases forms, analyzing only the words that may make one of their
// terms (toks is scratch).
func (a *analyzer) spansOf(text string, forms [][]string, spans [][2]int, toks *[]token) [][2]int {
	if len(forms) == 0 {
		return spans
	}
	var want termFilter
	want.hangul = a.hlHangul[:0]
	words := true // no phrase: the tokens need no positions
	for _, form := range forms {
		for _, t := range form {
			want.add(t)
		}
		words = words && len(form) == 1
	}
	if words && isASCII(text) {
		*toks = a.asciiWords(text, (*toks)[:0], &want)
	} else {
		*toks = a.analyzeSome(text, (*toks)[:0], &want)
	}
	a.hlHangul = want.hangul[:0]
	for _, form := range forms {
		spans = appendSpans(spans, *toks, form)
	}
	return spans
}

// mayHold is false when text cannot hold the phrase ts: a term of Hangul
// alone stands in the analyzed text only as the same bytes (Hangul has no
// case, stem or width to fold).
func mayHold(text string, ts []string) bool {
	for _, t := range ts {
		if t != "" && isHangulOnly(t) && !strings.Contains(text, t) {
			return false
		}
	}
	return true
}

func isHangulOnly(s string) bool {
	for _, r := range s {
		if !(0xAC00 <= r && r <= 0xD7A3) {
			return false
		}
	}
	return s != ""
}

// appendSpans appends the bytes of every match of the phrase ts (one
// term or more, "" where any term may stand) in toks.
func appendSpans(spans [][2]int, toks []token, ts []string) [][2]int {
	first := 0
	for first < len(ts) && ts[first] == "" {
		first++
	}
	if first == len(ts) {
		return spans
	}
	for i, t := range toks {
		if t.Term != ts[first] {
			continue
		}
		if len(ts) == 1 {
			spans = append(spans, [2]int{t.Start, t.End})
			continue
		}
		start := t.Position - first
		at := len(spans)
		ok := true
		for k, want := range ts {
			if want == "" {
				continue
			}
			found := false
			// Tokens are in position order: look around i.
			for j := max(0, i-len(ts)-1); j < len(toks) && toks[j].Position <= start+k; j++ {
				if toks[j].Position == start+k && toks[j].Term == want {
					spans = append(spans, [2]int{toks[j].Start, toks[j].End})
					found = true
					break
				}
			}
			if !found {
				ok = false
				break
			}
		}
		if !ok {
			spans = spans[:at]
		}
	}
	return spans
}

// snippet returns the part of text around the first cluster of spans,
// HTML-escaped, with the spans in <mark>: the whole text when it is short,
// otherwise about snippetRunes runes cut at spaces, with "…" where cut.
func snippet(text string, spans [][2]int) string {
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	// Merge overlapping and touching spans (the bigrams of one Hangul word).
	merged := spans[:1]
	for _, s := range spans[1:] {
		last := &merged[len(merged)-1]
		if s[0] <= last[1] {
			last[1] = max(last[1], s[1])
			continue
		}
		merged = append(merged, s)
	}
	from, to := 0, len(text)
	if utf8.RuneCountInString(text) > snippetRunes {
		// Start a little before the first match, at a space.
		from = backRunes(text, merged[0][0], snippetRunes/4)
		to = forwardRunes(text, from, snippetRunes)
		if to < merged[0][1] {
			to = merged[0][1]
		}
	}
	var b strings.Builder
	b.Grow(to - from + len(merged)*len("<mark></mark>") + 2*len("…"))
	if from > 0 {
		b.WriteString("…")
	}
	at := from
	for _, s := range merged {
		if s[0] < from || s[1] > to {
			continue
		}
		b.WriteString(html.EscapeString(text[at:s[0]]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(text[s[0]:s[1]]))
		b.WriteString("</mark>")
		at = s[1]
	}
	b.WriteString(html.EscapeString(text[at:to]))
	if to < len(text) {
		b.WriteString("…")
	}
	return b.String()
}

// backRunes returns the offset of about n runes before i, moved forward to
// the start of a word.
func backRunes(text string, i, n int) int {
	j := i
	for k := 0; k < n && j > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(text[:j])
		j -= size
	}
	if j == 0 {
		return 0
	}
	if sp := strings.IndexFunc(text[j:i], unicode.IsSpace); sp >= 0 {
		j += sp
		_, size := utf8.DecodeRuneInString(text[j:])
		return j + size
	}
	return j
}

// forwardRunes returns the offset of about n runes after i, moved back to
// the end of a word.
func forwardRunes(text string, i, n int) int {
	j := i
	for k := 0; k < n && j < len(text); k++ {
		_, size := utf8.DecodeRuneInString(text[j:])
		j += size
	}
	if j >= len(text) {
		return len(text)
	}
	if sp := strings.LastIndexFunc(text[i:j], unicode.IsSpace); sp > 0 {
		return i + sp
	}
	return j
}
