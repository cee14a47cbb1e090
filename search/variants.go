package search

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Other spellings of the same words. A clause matches its words as given
// or as any of these forms, each a phrase of its own (clauseQ.forms):
//
//   - English compounds, hyphenated, joined or spaced: "keep-alive" also
//     finds keepalive (and keepAlive, one word once case is folded);
//     keepalive also finds "keep alive" and "keep-alive" (every split of
//     the word into two words the analyzer keeps); a quoted phrase also
//     finds its words with any two neighbours joined.
//   - Korean nouns with or without the spaces between them: a word of
//     Hangul also finds the two words of every split of it into what may
//     be two nouns ("커넥션풀": "커넥션 풀"; see splitsNouns), a quoted phrase also finds its Hangul words joined
//     ("커넥션 풀": 커넥션풀), and a word of one syllable next to another
//     Hangul word of the query also finds the two joined (풀 after 커넥션:
//     the bigram 션풀). The index keeps the first syllable of every Hangul
//     run as a term too (see batch.go), so that a split whose last word
//     is one syllable finds it before a particle ("커넥션 풀이").
//
// Variants only add matches; the words as given rank and highlight as
// before.

// maxForms bounds the forms of one clause (the words as given included).
const maxForms = 12

// maxSplitRunes bounds the words split into two.
const maxSplitRunes = 24

// variants returns the other forms of clause i of clauses, whose terms
// are ts.
func variants(clauses []clause, i int, ts []string) [][]string {
	cl := clauses[i]
	var out [][]string
	add := func(form []string) {
		if len(out)+1 >= maxForms || len(form) == 0 || slices.Equal(form, ts) {
			return
		}
		for _, f := range out {
			if slices.Equal(f, form) {
				return
			}
		}
		out = append(out, form)
	}
	text := strings.TrimSpace(cl.text)
	single := !strings.ContainsFunc(text, isSpaceRune)
	switch {
	case single && isASCIILetters(text, true) && strings.Contains(text, "-"):
		// keep-alive: keepalive.
		if t := oneTerm(strings.ReplaceAll(text, "-", "")); t != "" {
			add([]string{t})
		}
	case single && isASCIILetters(text, false):
		// keepalive: "keep alive".
		if len(text) <= maxSplitRunes {
			for k := 2; k+2 <= len(text); k++ {
				a, b := oneTerm(text[:k]), oneTerm(text[k:])
				if a != "" && b != "" {
					add([]string{a, b})
				}
			}
		}
	case single && isHangulOnly(text):
		// 커넥션풀: "커넥션 풀".
		if n := utf8.RuneCountInString(text); n <= maxSplitRunes {
			left := 0
			for k := range text {
				if left > 0 && splitsNouns(left, n-left) {
					add(terms(text[:k] + " " + text[k:]))
				}
				left++
			}
		}
		if !cl.phrase && utf8.RuneCountInString(text) == 1 {
			// 풀 next to 커넥션: 션풀.
			if j := i - 1; j >= 0 && plainNeighbour(clauses[j], cl) {
				r, _ := utf8.DecodeLastRuneInString(clauses[j].text)
				add([]string{string(r) + text})
			}
			if j := i + 1; j < len(clauses) && plainNeighbour(clauses[j], cl) {
				r, _ := utf8.DecodeRuneInString(clauses[j].text)
				add([]string{text + string(r)})
			}
		}
	case !single:
		words := strings.Fields(text)
		// "커넥션 풀": 커넥션풀.
		if joined := joinHangul(words); joined != text {
			add(terms(joined))
		}
		// "keep alive": keepalive, one pair of neighbours at a time.
		for k := 0; k+1 < len(words); k++ {
			if isASCIILetters(words[k], true) && isASCIILetters(words[k+1], true) {
				w := slices.Clone(words)
				w[k] += w[k+1]
				w = slices.Delete(w, k+1, k+2)
				add(terms(strings.Join(w, " ")))
			}
		}
	}
	return out
}

// splitsNouns says whether a word of Hangul may be two nouns of a and b
// syllables: both of two or more, or one of one beside one of three or
// more (커넥션 풀, not 커넥 션).
func splitsNouns(a, b int) bool {
	return (a >= 2 && b >= 2) || (a == 1 && b >= 3) || (b == 1 && a >= 3)
}

// plainNeighbour says whether clause n, next to the one-syllable clause
// cl, is a word of Hangul alone that the query gives the same way.
func plainNeighbour(n, cl clause) bool {
	return !n.phrase && n.exclude == cl.exclude && n.field == cl.field && isHangulOnly(n.text)
}

// joinHangul joins the neighbours of words that end and start with Hangul.
func joinHangul(words []string) string {
	var b strings.Builder
	for k, w := range words {
		if k > 0 {
			prev, _ := utf8.DecodeLastRuneInString(words[k-1])
			next, _ := utf8.DecodeRuneInString(w)
			if !(isHangul(prev) && isHangul(next)) {
				b.WriteByte(' ')
			}
		}
		b.WriteString(w)
	}
	return b.String()
}

// oneTerm returns the term of text when the analyzer makes exactly one
// of it (not a stop word), else "".
func oneTerm(text string) string {
	toks := analyze(text)
	if len(toks) != 1 {
		return ""
	}
	return toks[0].Term
}

// isASCIILetters says whether s is ASCII letters alone, or, with hyphens,
// letters with single hyphens between them.
func isASCIILetters(s string, hyphens bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if 'a' <= c && c <= 'z' {
			continue
		}
		if hyphens && s[i] == '-' && i > 0 && i < len(s)-1 && s[i-1] != '-' {
			continue
		}
		return false
	}
	return true
}

func isSpaceRune(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == 0x3000 || r == 0xA0
}
