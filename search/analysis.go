package search

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	unicodetok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

// The library's analyzer serves both languages, so that the Korean text's
// English words ("Consul 클러스터") and the English text's rare Korean
// words are found by the same query:
//
//   - words are split by Unicode word boundaries (UAX #29);
//   - full- and half-width forms are folded (cjk_width), then English
//     possessives are dropped, case is folded, English stop words are
//     removed and English words are stemmed (bleve's "en" analyzer chain,
//     which leaves Hangul alone);
//   - every run of Hangul is cut into overlapping bigrams at consecutive
//     positions (hangulBigram), so that a word inside a longer run, such as
//     클러스터 in 클러스터의, is found. bleve's own cjk_bigram filter does
//     not do this: the Unicode tokenizer types Hangul as letters, not
//     ideographs, and cjk_bigram only splits ideographs.
//
// Queries go through the same analyzer.
//
// It is bleve's analysis, made fast for the index: text made only of
// ASCII, Hangul syllables and a few punctuation marks (nearly all of the
// library's text) is split by a tokenizer of its own that applies the
// UAX #29 rules those characters can meet, and each distinct word goes
// through bleve's filter chain once and is then remembered; any other
// text goes through bleve's analyzer. TestAnalyzerMatchesBleve holds the
// two to the same tokens on the corpus and on edge cases.
var bleveAnalyzer = newBleveAnalyzer()

func newBleveAnalyzer() *analysis.DefaultAnalyzer {
	return &analysis.DefaultAnalyzer{
		Tokenizer:    unicodetok.NewUnicodeTokenizer(),
		TokenFilters: wordFilters(),
	}
}

// wordFilters is the chain every word goes through before hangulBigram.
func wordFilters() []analysis.TokenFilter {
	cache := registry.NewCache()
	stop, err := cache.TokenFilterNamed(en.StopName)
	if err != nil {
		panic("search: bleve's English stop word filter is missing: " + err.Error())
	}
	return []analysis.TokenFilter{
		cjk.NewCJKWidthFilter(),
		en.NewPossessiveFilter(),
		lowercase.NewLowerCaseFilter(),
		stop,
		porter.NewPorterStemmer(),
		hangulBigram{},
	}
}

// token is one term of analyzed text: its position (1-based; stop words
// leave gaps) and its bytes in the text.
type token struct {
	Term       string
	Position   int
	Start, End int
}

// analyzer analyzes text; it is not safe for concurrent use (it keeps a
// cache of words). Get one from getAnalyzer.
type analyzer struct {
	words   map[string]string // raw word -> its term, "" for a stop word
	intern  map[string]string
	filters []analysis.TokenFilter // without hangulBigram
	one     [1]*analysis.Token
	raw     []token
	// Scratch of highlights.
	hlToks   []token
	hlHangul []string
	hlSpans  [][2]int
	hlForms  [][]string
	hlTForms [][]string
}

const analyzerCacheSize = 1 << 17

func newTextAnalyzer() *analyzer {
	f := wordFilters()
	return &analyzer{words: map[string]string{}, intern: map[string]string{}, filters: f[:len(f)-1]}
}

var analyzers = sync.Pool{New: func() any { return newTextAnalyzer() }}

func getAnalyzer() *analyzer  { return analyzers.Get().(*analyzer) }
func putAnalyzer(a *analyzer) { analyzers.Put(a) }

// analyze runs the library's analyzer over s.
func analyze(s string) []token {
	a := getAnalyzer()
	defer putAnalyzer(a)
	return a.analyze(s, nil)
}

// analyze appends the tokens of text to out.
func (a *analyzer) analyze(text string, out []token) []token {
	return a.analyzeSome(text, out, nil)
}

// termFilter names the terms a caller of analyzeSome looks for.
type termFilter struct {
	// first holds the first byte of every term looked for.
	first [256]bool
	// hangul holds the terms of Hangul syllables alone looked for; with
	// anyHangul, a term that holds Hangul but not syllables alone is.
	hangul    []string
	anyHangul bool
}

// add looks for term too.
func (f *termFilter) add(term string) {
	if term == "" {
		return
	}
	f.first[term[0]] = true
	switch {
	case isHangulOnly(term):
		if !slices.Contains(f.hangul, term) {
			f.hangul = append(f.hangul, term)
		}
	case hasHangulString(term):
		f.anyHangul = true
	}
}

// analyzeSome is analyze, leaving out (when want is set) words that make
// no term want looks for: a word of ASCII alone whose first letter, case
// folded, no such term starts with (its terms start with that letter),
// and a word of Hangul syllables alone that holds none of want's Hangul
// terms (its terms are its bigrams, or itself). Callers that look for
// those terms lose nothing and skip most words. Positions are those of
// analyze.
func (a *analyzer) analyzeSome(text string, out []token, want *termFilter) []token {
	raw, ok := a.tokenize(text, a.raw[:0])
	a.raw = raw
	if !ok {
		for _, t := range bleveAnalyzer.Analyze([]byte(text)) {
			out = append(out, token{Term: a.internBytes(t.Term), Position: t.Position, Start: t.Start, End: t.End})
		}
		return out
	}
	shift := 0
	for _, t := range raw {
		w := text[t.Start:t.End]
		if want != nil && !want.first[lowerASCII(w[0])] && isASCII(w) {
			continue
		}
		if want != nil && !want.anyHangul && isHangulOnly(w) && !containsAny(w, want.hangul) {
			// Hangul syllables are their own term (no case, stem, width
			// or stop word), cut into bigrams that take the positions
			// they would have taken (one token for a single syllable).
			shift += max(utf8.RuneCountInString(w)-1, 1) - 1
			continue
		}
		term := a.word(w)
		if term == "" {
			continue // a stop word
		}
		if !hasHangulString(term) {
			out = append(out, token{Term: term, Position: t.Position + shift, Start: t.Start, End: t.End})
			continue
		}
		// hangulBigram, as below.
		pos := t.Position + shift
		first := pos
		for off := 0; off < len(term); {
			n := scriptRunLen(term[off:])
			run := term[off : off+n]
			at := t.Start + off
			off += n
			if r, _ := utf8.DecodeRuneInString(run); !isHangul(r) || utf8.RuneCountInString(run) == 1 {
				out = append(out, token{Term: run, Position: pos, Start: at, End: at + n})
				pos++
				continue
			}
			for i := 0; ; {
				_, s1 := utf8.DecodeRuneInString(run[i:])
				if i+s1 >= len(run) {
					break
				}
				_, s2 := utf8.DecodeRuneInString(run[i+s1:])
				out = append(out, token{Term: run[i : i+s1+s2], Position: pos, Start: at + i, End: at + i + s1 + s2})
				pos++
				i += s1
			}
		}
		shift += pos - first - 1
	}
	return out
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// word returns the term of one raw word, "" for a stop word, from the
// cache or through bleve's filter chain. The offsets the bigrams are given
// assume, as in hangulBigram, that the term has the bytes of the word.
func (a *analyzer) word(w string) string {
	if t, ok := a.words[w]; ok {
		return t
	}
	tok := &analysis.Token{Term: []byte(w), Start: 0, End: len(w), Position: 1, Type: analysis.AlphaNumeric}
	a.one[0] = tok
	stream := analysis.TokenStream(a.one[:])
	for _, f := range a.filters {
		stream = f.Filter(stream)
	}
	term := ""
	if len(stream) == 1 {
		term = a.internBytes(stream[0].Term)
	}
	if len(a.words) >= analyzerCacheSize {
		clear(a.words)
		clear(a.intern)
	}
	a.words[strings.Clone(w)] = term
	return term
}

func (a *analyzer) internBytes(b []byte) string {
	if s, ok := a.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	a.intern[s] = s
	return s
}

// Word break classes of the characters the fast tokenizer knows.
const (
	wbUnknown = iota // not known: the text goes through bleve
	wbOther          // breaks, not part of a word
	wbLetter         // ALetter
	wbNumeric
	wbExtendNumLet // _
	wbMidLetter    // : ·
	wbMidNum       // , ;
	wbMidNumLet    // . ' ‘ ’ ․
)

var asciiClass = func() (c [128]uint8) {
	for i := range c {
		c[i] = wbOther
		switch {
		case 'a' <= i && i <= 'z', 'A' <= i && i <= 'Z':
			c[i] = wbLetter
		case '0' <= i && i <= '9':
			c[i] = wbNumeric
		}
	}
	c['_'] = wbExtendNumLet
	c[':'] = wbMidLetter
	c[','], c[';'] = wbMidNum, wbMidNum
	c['.'], c['\''] = wbMidNumLet, wbMidNumLet
	return c
}()

func wbClass(r rune) uint8 {
	switch {
	case r < utf8.RuneSelf:
		return asciiClass[r]
	case 0xAC00 <= r && r <= 0xD7A3: // Hangul syllables
		return wbLetter
	case r == 0x00B7:
		return wbMidLetter
	case r == 0x2018 || r == 0x2019 || r == 0x2024:
		return wbMidNumLet
	case 0x2010 <= r && r <= 0x2015, r == 0x201C, r == 0x201D, r == 0x2026, r == 0x00D7, r == 0x2192, r == 0x2190, r == 0x00B0:
		return wbOther
	}
	return wbUnknown
}

func isWordClass(c uint8) bool { return c == wbLetter || c == wbNumeric || c == wbExtendNumLet }

// tokenize splits text at word boundaries into raw words (term unset but
// for its length), or reports false if text has a character it does not
// know.
func (a *analyzer) tokenize(text string, out []token) ([]token, bool) {
	pos := 1
	for i := 0; i < len(text); {
		c, n := classAt(text, i)
		if c == wbUnknown {
			return out, false
		}
		if !isWordClass(c) {
			i += n
			continue
		}
		end, ok := wordEnd(text, i, c, n)
		if !ok {
			return out, false
		}
		out = append(out, token{Term: text[i:end], Position: pos, Start: i, End: end})
		pos++
		i = end
	}
	return out, true
}

// classAt returns the word-break class of the character at i of text and
// its length in bytes (wbOther and 0 at the end).
func classAt(text string, i int) (uint8, int) {
	if i >= len(text) {
		return wbOther, 0
	}
	if c := text[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	return wbClass(r), n
}

// wordEnd returns the end of the word that starts at i with a character
// of class c, n bytes long; false if the text has a character tokenize
// does not know.
func wordEnd(text string, i int, c uint8, n int) (int, bool) {
	prev := c
	i += n
	for {
		nc, nn := classAt(text, i)
		if nc == wbUnknown {
			return i, false
		}
		if isWordClass(nc) {
			prev = nc
			i += nn
			continue
		}
		if joins(prev, nc) {
			c2, n2 := classAt(text, i+nn)
			if c2 == wbUnknown {
				return i, false
			}
			if c2 == prev {
				i += nn + n2
				continue
			}
		}
		return i, true
	}
}

// joins says whether a character of class mid after one of class prev
// may join it to what follows (if that is of class prev too).
func joins(prev, mid uint8) bool {
	return (prev == wbLetter && (mid == wbMidLetter || mid == wbMidNumLet)) ||
		(prev == wbNumeric && (mid == wbMidNum || mid == wbMidNumLet))
}

// asciiWordStart says whether tokenize starts a word at byte i of text,
// which is ASCII alone: a word character not continuing the word before
// it, directly or across a joining character.
func asciiWordStart(text string, i int) bool {
	c := asciiClass[text[i]]
	if !isWordClass(c) {
		return false
	}
	if i == 0 {
		return true
	}
	before := asciiClass[text[i-1]]
	if isWordClass(before) {
		return false
	}
	return i < 2 || !joins(asciiClass[text[i-2]], before) || asciiClass[text[i-2]] != c
}

// asciiWords appends the terms of the words of text, which is ASCII
// alone, that want may look for (by their first letter), with their
// bytes but no positions: for highlights of words, which need no phrase.
// Only those words are cut out; the others are passed over a byte at a
// time.
func (a *analyzer) asciiWords(text string, out []token, want *termFilter) []token {
	for i := 0; i < len(text); i++ {
		if !want.first[lowerASCII(text[i])] || !asciiWordStart(text, i) {
			continue
		}
		end, _ := wordEnd(text, i, asciiClass[text[i]], 1)
		if term := a.word(text[i:end]); term != "" {
			out = append(out, token{Term: term, Start: i, End: end})
		}
		i = end - 1
	}
	return out
}
