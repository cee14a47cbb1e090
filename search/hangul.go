package search

import (
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Korean text: Hangul runs are cut into bigrams, and texts are split into
// runs of one script.

func isHangul(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case 0xAC00 <= r && r <= 0xD7A3: // syllables
		return true
	}
	return unicode.Is(unicode.Hangul, r)
}

// hangulBigram replaces each run of Hangul inside a token by its
// overlapping bigrams (a run of one syllable stays a unigram); the other
// runs of a mixed token ("73시간": 73, 시간) stay whole. Positions stay
// consecutive within a run and keep the gaps stop words left between
// tokens; offsets point at the run's bytes in the text.
type hangulBigram struct{}

func (hangulBigram) Filter(input analysis.TokenStream) analysis.TokenStream {
	out := make(analysis.TokenStream, 0, len(input))
	shift := 0
	for _, tok := range input {
		if !hasHangul(tok.Term) {
			tok.Position += shift
			out = append(out, tok)
			continue
		}
		pos := tok.Position + shift
		first := pos
		for _, run := range scriptRuns(tok.Term) {
			term := tok.Term[run.start:run.end]
			if !run.hangul {
				out = append(out, &analysis.Token{Term: term, Start: tok.Start + run.start, End: tok.Start + run.end,
					Position: pos, Type: tok.Type, KeyWord: tok.KeyWord})
				pos++
				continue
			}
			// Bigrams: runes i and i+1 for every i; one rune alone.
			var bounds []int // byte offset of each rune, then the end
			for i := range string(term) {
				bounds = append(bounds, i)
			}
			bounds = append(bounds, len(term))
			runes := len(bounds) - 1
			if runes == 1 {
				out = append(out, &analysis.Token{Term: term, Start: tok.Start + run.start, End: tok.Start + run.end,
					Position: pos, Type: analysis.Single})
				pos++
				continue
			}
			for i := 0; i+1 < runes; i++ {
				s, e := bounds[i], bounds[i+2]
				out = append(out, &analysis.Token{Term: term[s:e], Start: tok.Start + run.start + s, End: tok.Start + run.start + e,
					Position: pos, Type: analysis.Double})
				pos++
			}
		}
		shift += pos - first - 1
	}
	return out
}

func hasHangul(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r >= 0x1100 && isHangul(r) {
			return true
		}
		b = b[n:]
	}
	return false
}

func hasHangulString(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= 0x1100 && isHangul(r) {
			return true
		}
		i += n
	}
	return false
}

// scriptRunLen is the length of the run of Hangul or of anything else
// that starts s.
func scriptRunLen(s string) int {
	r, n := utf8.DecodeRuneInString(s)
	h := isHangul(r)
	i := n
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if isHangul(r) != h {
			break
		}
		i += n
	}
	return i
}

type scriptRun struct {
	start, end int
	hangul     bool
}

// scriptRuns splits b into maximal runs of Hangul and of anything else.
func scriptRuns(b []byte) []scriptRun {
	var runs []scriptRun
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		h := isHangul(r)
		if len(runs) > 0 && runs[len(runs)-1].hangul == h {
			runs[len(runs)-1].end = i + n
		} else {
			runs = append(runs, scriptRun{start: i, end: i + n, hangul: h})
		}
		i += n
	}
	return runs
}
