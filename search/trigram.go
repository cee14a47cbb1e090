package search

import "unicode/utf8"

// Hangul trigrams. A word of three syllables (커넥션) is the phrase of two
// overlapping bigrams (커넥 넥션); checking that phrase by positions for
// every incident holding both bigrams was most of a Korean search's work.
// So the index also keeps, wherever two overlapping Hangul bigrams stand
// at consecutive positions, a trigram term at the first one's position:
// a trigram stands exactly where its two bigrams stand in a row, so a
// word of three syllables is read from one posting, whose frequencies are
// the phrase's, and a longer word from a phrase of fewer and rarer
// trigrams (see findTerms).
//
// Trigrams only find: they count in no field's length, and a clause that
// reads them scores with the idfs of its bigrams, so a search ranks as it
// would with bigrams alone (TestTopKMatchesExhaustive compares the two).
// Their terms start with trigramMark, which no analyzed term does.
const trigramMark = "\x00"

// hangulPair returns the length in bytes of the first syllable of s when s
// is two Hangul runes.
func hangulPair(s string) (int, bool) {
	if len(s) < 4 || s[0] < 0xE1 { // Hangul runes take three bytes, from U+1100
		return 0, false
	}
	r1, n1 := utf8.DecodeRuneInString(s)
	r2, n2 := utf8.DecodeRuneInString(s[n1:])
	if n1+n2 != len(s) || !isHangul(r1) || !isHangul(r2) {
		return 0, false
	}
	return n1, true
}

// appendTrigram appends to buf the trigram term of the bigrams a and b
// when b may follow a in a run of Hangul (a's second rune is b's first);
// false otherwise.
func appendTrigram(buf []byte, a, b string) ([]byte, bool) {
	na, ok := hangulPair(a)
	if !ok {
		return buf, false
	}
	nb, ok := hangulPair(b)
	if !ok || a[na:] != b[:nb] {
		return buf, false
	}
	buf = append(buf, trigramMark...)
	buf = append(buf, a...)
	return append(buf, b[nb:]...), true
}

// findTerms returns the terms a clause reads the postings with, for the
// phrase ts (its terms at consecutive positions, "" for a gap): ts, with
// every run of overlapping Hangul bigrams replaced by trigrams that cover
// it (ABCDE: ABC at 0, CDE at 2), the other places of the run left "".
// A phrase that comes down to one term is that term alone.
func findTerms(ts []string) []string {
	out, copied := ts, false
	var buf []byte
	for a := 0; a < len(ts); {
		b := a // the run of overlapping bigrams is a..b
		for b+1 < len(ts) {
			if _, ok := appendTrigram(buf[:0], ts[b], ts[b+1]); !ok {
				break
			}
			b++
		}
		if b == a {
			a++
			continue
		}
		if !copied {
			out, copied = append([]string(nil), ts...), true
		}
		for j := a; j <= b; j++ {
			out[j] = ""
		}
		cover := func(j int) {
			buf, _ = appendTrigram(buf[:0], ts[j], ts[j+1])
			out[j] = string(buf)
		}
		for j := a; j+1 <= b; j += 2 {
			cover(j)
		}
		if (b-a)%2 == 0 {
			cover(b - 1)
		}
		a = b + 1
	}
	// Gaps at either end say nothing.
	lo, hi := 0, len(out)
	for lo < hi && out[lo] == "" {
		lo++
	}
	for hi > lo && out[hi-1] == "" {
		hi--
	}
	return out[lo:hi]
}
