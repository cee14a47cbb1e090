package search

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
)

// Across languages. The glossary (package glossary) pairs English and
// Korean words and phrases of one meaning. A query's words are matched
// against it longest phrase first: a run of plain words that is a form of
// an entry ("replication lag") gives each of its words the entry's forms
// of the other language as further forms of its clause ("복제 지연"),
// searched in that language's fields only; a quoted phrase or a word not
// part of a longer match is looked up alone. Every clause must still
// match, through its own words or a translation, so "replication lag
// mysql" finds a Korean text holding 복제 지연 and MySQL.
//
// The hits found through the query's own words (the query without its
// translations) rank first; the hits that need a translation follow, in
// their own order (rankTiers), and their highlights say so.

// maxTranslations bounds the translated forms of one clause.
const maxTranslations = 8

// translation is one form of an entry in the other language.
type translation struct {
	lang incidentlib.Lang // the language of text
	text string
	// forms are text's phrase (its terms), then its other forms
	// (variants), and finds what each one's postings are read with
	// (findTerms): analyzed once per glossary, not per query.
	forms, finds [][]string
}

// translator is a glossary compiled for queries: by the key of a form
// (glossKey), the forms of the other language.
type translator struct {
	version  uint64
	to       map[string][]translation
	maxWords int // the most words a key has
	// concepts are the entries for SimilarByWords (similar.go).
	concepts []concept
}

// newTranslator compiles g.
func newTranslator(g *glossary.Glossary) *translator {
	tr := &translator{version: g.Version, to: map[string][]translation{}}
	analyzed := map[string]translation{}
	translationOf := func(text string, lang incidentlib.Lang) translation {
		if t, ok := analyzed[text]; ok && t.lang == lang {
			return t
		}
		t := translation{lang: lang, text: text}
		if ts := terms(text); len(ts) > 0 {
			t.forms = append([][]string{ts}, variants([]clause{{text: text, phrase: true}}, 0, ts)...)
			for _, form := range t.forms {
				t.finds = append(t.finds, findTerms(form))
			}
		}
		analyzed[text] = t
		return t
	}
	add := func(from []string, to []string, lang incidentlib.Lang) {
		for _, f := range from {
			k, n := glossKey(f)
			if k == "" {
				continue
			}
			tr.maxWords = max(tr.maxWords, n)
			for _, t := range to {
				if !containsTranslation(tr.to[k], t) {
					tr.to[k] = append(tr.to[k], translationOf(t, lang))
				}
			}
		}
	}
	sides := make([][2][]string, len(g.Entries))
	names := make([]string, len(g.Entries))
	for i, e := range g.Entries {
		add(e.En, e.Ko, incidentlib.LangKo)
		add(e.Ko, e.En, incidentlib.LangEn)
		sides[i], names[i] = [2][]string{e.En, e.Ko}, e.En[0]
	}
	tr.concepts = conceptsOf(sides, names)
	return tr
}

func containsTranslation(ts []translation, text string) bool {
	for _, t := range ts {
		if t.text == text {
			return true
		}
	}
	return false
}

// glossKey returns what a form of the glossary or a run of query words is
// looked up by, and its number of words: English words case-folded and
// stemmed as the index analyzes them (stop words left out), Hangul words
// as written with the spaces between them dropped (복제 지연 and 복제지연
// are one key), other characters separating words. The count is of every
// word, stop words too.
func glossKey(text string) (string, int) {
	var b strings.Builder
	words := 0
	prevHangul := false
	for text != "" {
		r, size := utf8.DecodeRuneInString(text)
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			text = text[size:]
			continue
		}
		hangul := isHangul(r)
		end := strings.IndexFunc(text, func(c rune) bool {
			return (!unicode.IsLetter(c) && !unicode.IsDigit(c)) || isHangul(c) != hangul
		})
		if end < 0 {
			end = len(text)
		}
		word := text[:end]
		text = text[end:]
		words++
		if !hangul {
			if word = oneTerm(strings.ToLower(word)); word == "" {
				prevHangul = false
				continue
			}
		}
		if b.Len() > 0 && !(hangul && prevHangul) {
			b.WriteByte(' ')
		}
		b.WriteString(word)
		prevHangul = hangul
	}
	return b.String(), words
}

// particles are the Korean particles a query word may end with (장애가,
// 배포를), tried off when the word as written is no form of the glossary.
var particles = []string{"에서", "으로", "까지", "부터", "이나", "은", "는", "이", "가", "을", "를", "의", "에", "로", "와", "과", "도"}

// lookup returns the translations of text: of its key, or, when it ends
// in Hangul and that key is none, of the key without a particle at its
// end.
func (tr *translator) lookup(text string) []translation {
	k, _ := glossKey(text)
	if ts, ok := tr.to[k]; ok || k == "" {
		return ts
	}
	last, _ := utf8.DecodeLastRuneInString(k)
	if !isHangul(last) {
		return nil
	}
	for _, p := range particles {
		if rest, ok := strings.CutSuffix(k, p); ok && utf8.RuneCountInString(rest) >= 2 {
			if last, _ := utf8.DecodeLastRuneInString(rest); isHangul(last) {
				if ts, ok := tr.to[rest]; ok {
					return ts
				}
			}
		}
	}
	return nil
}

// assign returns the translations of each clause, matching runs of plain
// words longest first.
func (tr *translator) assign(clauses []clause) [][]translation {
	out := make([][]translation, len(clauses))
	if tr == nil || len(tr.to) == 0 {
		return out
	}
	// runs: consecutive plain words alike in exclusion and field.
	joinable := func(a, b clause) bool {
		return !a.phrase && !b.phrase && a.exclude == b.exclude && a.field == b.field
	}
	for i := 0; i < len(clauses); {
		end := i + 1
		for end < len(clauses) && end-i < tr.maxWords && joinable(clauses[end-1], clauses[end]) {
			end++
		}
		matched := false
		for j := end; j > i+1; j-- {
			texts := make([]string, 0, j-i)
			for _, c := range clauses[i:j] {
				texts = append(texts, c.text)
			}
			if ts := tr.lookup(strings.Join(texts, " ")); len(ts) > 0 {
				for k := i; k < j; k++ {
					out[k] = ts
				}
				i, matched = j, true
				break
			}
		}
		if !matched {
			out[i] = tr.lookup(clauses[i].text)
			i++
		}
	}
	return out
}

// translate adds to q the forms of the translations ts, each in the
// fields of its language that the clause and the search's lang allow,
// and returns whether it added any.
func translate(q *clauseQ, cl clause, ts []translation, lang incidentlib.Lang) bool {
	added := false
	var finds [][]string // of each form of q.tforms
	for _, t := range ts {
		if lang != "" && t.lang != lang {
			continue
		}
		fs := translationFields(cl.field, t.lang)
		if len(fs) == 0 {
			continue
		}
		for k, form := range t.forms {
			if len(q.tforms) >= maxTranslations {
				break
			}
			if containsForm(q.forms, form) || containsForm(q.tforms, form) {
				continue
			}
			q.tforms = append(q.tforms, form)
			q.tfields = append(q.tfields, fs)
			finds = append(finds, t.finds[k])
		}
	}
	// A form that holds another one of the same fields finds nothing the
	// other does not (서비스 중단 beside 중단): it is dropped, and its phrase
	// positions are never read.
	keep := 0
	for i, form := range q.tforms {
		redundant := false
		for j, other := range q.tforms {
			if j != i && slices.Equal(q.tfields[i], q.tfields[j]) && holdsPhrase(form, other) && (len(other) < len(form) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			q.tforms[keep], q.tfields[keep], finds[keep] = form, q.tfields[i], finds[i]
			keep++
		}
	}
	q.tforms, q.tfields = q.tforms[:keep], q.tfields[:keep]
	for i, form := range q.tforms {
		for _, f := range q.tfields[i] {
			q.legs = append(q.legs, leg{f: f, terms: form, find: finds[i]})
		}
		added = true
	}
	return added
}

// holdsPhrase says whether the phrase sub stands in form at consecutive
// positions ("" in sub standing for any term).
func holdsPhrase(form, sub []string) bool {
	if len(sub) == 0 || len(sub) > len(form) {
		return false
	}
outer:
	for i := 0; i+len(sub) <= len(form); i++ {
		for k, t := range sub {
			if t != "" && form[i+k] != t {
				continue outer
			}
		}
		return true
	}
	return false
}

func containsForm(forms [][]string, form []string) bool {
	for _, f := range forms {
		if len(f) == len(form) && strings.Join(f, "\x00") == strings.Join(form, "\x00") {
			return true
		}
	}
	return false
}

// translationFields returns the index fields of restrict (every text
// field when empty) in lang, the organization left out.
func translationFields(restrict Field, lang incidentlib.Lang) []ifield {
	var out []ifield
	for _, f := range indexFields(restrict, lang) {
		if f != ifOrg {
			out = append(out, f)
		}
	}
	return out
}

// translator returns the glossary compiled, compiled again only when its
// version changed; nil without a glossary.
func (x *Index) translator(ctx context.Context) (*translator, error) {
	if x.opts.Glossary == nil {
		return nil, nil
	}
	g, err := x.opts.Glossary.Glossary(ctx)
	if err != nil || g == nil {
		return nil, err
	}
	if tr := x.tr.Load(); tr != nil && tr.version == g.Version {
		return tr, nil
	}
	tr := newTranslator(g)
	x.tr.Store(tr)
	return tr, nil
}
