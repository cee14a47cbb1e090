package search

import (
	"html"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	bsearch "github.com/blevesearch/bleve/v2/search"

	"github.com/incidentlib/incidentlib"
)

// snippetRunes is about how long a snippet is, marks and ellipses aside.
const snippetRunes = 200

// highlights cuts a snippet from every field of inc that the index says
// matched, in field order. The offsets come from the index; the text from
// the record the store holds now, and a match is marked only where that
// text still analyzes to the matched term there, so a record changed
// since the index read is never marked in the wrong place.
func highlights(inc *incidentlib.Incident, locs bsearch.FieldTermLocationMap, lang incidentlib.Lang) []incidentlib.Highlight {
	out := []incidentlib.Highlight{}
	for i := range fields {
		f := &fields[i]
		tl := locs[f.index]
		if len(tl) == 0 || (lang != "" && f.lang != "" && f.lang != lang) {
			continue
		}
		text := f.text(inc)
		var spans [][2]int
		for term, ls := range tl {
			for _, l := range ls {
				s, e := int(l.Start), int(l.End)
				if matchesAt(text, s, e, term) {
					spans = append(spans, [2]int{s, e})
				}
			}
		}
		if len(spans) == 0 {
			continue
		}
		out = append(out, incidentlib.Highlight{Field: string(f.name), Lang: f.lang, Snippet: snippet(text, spans)})
	}
	return out
}

// matchesAt reports whether text[s:e] is a whole term of the analyzer
// equal to term.
func matchesAt(text string, s, e int, term string) bool {
	if s < 0 || e > len(text) || s >= e || !utf8.RuneStart(text[s]) || (e < len(text) && !utf8.RuneStart(text[e])) {
		return false
	}
	for _, t := range analyze(text[s:e]) {
		if string(t.Term) == term {
			return true
		}
	}
	return false
}

// snippet returns the part of text around the first cluster of spans,
// HTML-escaped, with the spans in <mark>: the whole text when it is short,
// otherwise about snippetRunes runes cut at spaces, with "…" where cut.
func snippet(text string, spans [][2]int) string {
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
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
