package search

import (
	"unicode"
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
var analyzer = newAnalyzer()

func newAnalyzer() analysis.Analyzer {
	cache := registry.NewCache()
	stop, err := cache.TokenFilterNamed(en.StopName)
	if err != nil {
		panic("search: bleve's English stop word filter is missing: " + err.Error())
	}
	return &analysis.DefaultAnalyzer{
		Tokenizer: unicodetok.NewUnicodeTokenizer(),
		TokenFilters: []analysis.TokenFilter{
			cjk.NewCJKWidthFilter(),
			en.NewPossessiveFilter(),
			lowercase.NewLowerCaseFilter(),
			stop,
			porter.NewPorterStemmer(),
			hangulBigram{},
		},
	}
}

// analyze runs the library's analyzer over s.
func analyze(s string) analysis.TokenStream { return analyzer.Analyze([]byte(s)) }

func isHangul(r rune) bool { return unicode.Is(unicode.Hangul, r) }

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
