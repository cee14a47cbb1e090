package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// Query syntax, parsed here and never handed to bleve's query-string
// parser:
//
//	word            every word must match, in any indexed field
//	"two words"     a phrase: the words next to each other, in this order
//	-word -"a b"    no result may match it
//	title:word      only in the title; also lessons: and org:, with a word
//	title:"a b"     or a phrase
//
// Words are analyzed like the text (case folded, English stemmed, Hangul
// cut into bigrams), so a word the analyzer cuts into several terms
// ("keep-alive", 클러스터) matches as a phrase. A malformed query is an
// EBADQUERY error.

// Limits of a query.
const (
	maxQueryBytes   = 1000
	maxQueryClauses = 32
)

// clause is one word or phrase of a query.
type clause struct {
	text    string
	phrase  bool  // given in quotes
	exclude bool  // -word
	field   Field // "" for every field; FieldTitle, FieldLessons or FieldOrg
}

// prefixes are the field prefixes a clause may carry.
var prefixes = map[string]Field{"title": FieldTitle, "lessons": FieldLessons, "org": FieldOrg}

func badQuery(format string, args ...any) error {
	return incidentlib.FieldErrorf(incidentlib.EBADQUERY, []string{"query"}, format, args...)
}

// parse splits a query into clauses.
func parse(q string) ([]clause, error) {
	if len(q) > maxQueryBytes {
		return nil, badQuery("the query is %d bytes long; at most %d are allowed", len(q), maxQueryBytes)
	}
	if !utf8.ValidString(q) {
		return nil, badQuery("the query is not valid UTF-8")
	}
	var out []clause
	s := q
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			break
		}
		var c clause
		if s[0] == '-' {
			c.exclude = true
			s = s[1:]
			if s == "" || startsWithSpace(s) {
				return nil, badQuery("a '-' must be followed by the word or phrase to exclude")
			}
		}
		// A field prefix: letters, then a colon, then the word or phrase.
		if i := strings.IndexByte(s, ':'); i > 0 && isLetters(s[:i]) {
			name := s[:i]
			f, ok := prefixes[strings.ToLower(name)]
			if !ok {
				return nil, badQuery("unknown field %q: the query may name title:, lessons: or org: (put other text with a colon in quotation marks)", name+":")
			}
			c.field = f
			s = s[i+1:]
			if s == "" || startsWithSpace(s) {
				return nil, badQuery("%q must be followed directly by a word or a phrase", name+":")
			}
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, badQuery("a quotation mark is not closed")
			}
			c.text, c.phrase = s[1:1+end], true
			s = s[end+2:]
			if strings.TrimSpace(c.text) == "" {
				return nil, badQuery("a phrase in quotation marks is empty")
			}
		} else {
			end := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if end < 0 {
				end = len(s)
			}
			if end < len(s) && s[end] == '"' {
				return nil, badQuery("a quotation mark must start a phrase, not stand inside a word")
			}
			c.text, s = s[:end], s[end:]
		}
		out = append(out, c)
		if len(out) > maxQueryClauses {
			return nil, badQuery("the query has more than %d words and phrases", maxQueryClauses)
		}
	}
	if len(out) == 0 {
		return nil, badQuery("the query is empty")
	}
	return out, nil
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

// terms analyzes text into a phrase: its terms at their relative
// positions, "" where a stop word left a gap.
func terms(text string) []string {
	toks := analyze(text)
	if len(toks) == 0 {
		return nil
	}
	first := toks[0].Position
	out := make([]string, toks[len(toks)-1].Position-first+1)
	for _, t := range toks {
		out[t.Position-first] = t.Term
	}
	return out
}

// compiled is a parsed query ready to run.
type compiled struct {
	must    []clauseQ // every one must match
	mustNot []clauseQ // none may match
	bonus   *clauseQ  // adds to the score of what matches the rest
	// all: the query only excludes (-kubernetes), so every incident but
	// the excluded ones matches, each with score 0 (in number order).
	all bool
	// direct is the query without the translations of its must clauses
	// (glossary.go), whose hits rank first; nil when it has none.
	direct *compiled
}

// clauseQ is a term or a phrase in some fields of the index, or one of
// its other forms (see variants.go): it matches where any of its legs
// does, and its score is the sum of theirs.
type clauseQ struct {
	terms []string // a phrase: the terms at consecutive positions, "" where a stop word left a gap
	// find are the terms the postings are read with: terms, its Hangul
	// bigrams made trigrams (findTerms). Scores, highlights and the title
	// bonus use terms.
	find   []string
	fields []ifield
	boost  float64
	// restrict is the text field the clause was limited to ("" for
	// every field), for highlights.
	restrict Field
	// forms are the phrases the clause matches: terms first, then the
	// other spellings of the same words (variants).
	forms [][]string
	// tforms are the forms of the clause's translations into the other
	// language (glossary.go), each searched in the fields tfields holds
	// for it; their legs follow the others'.
	tforms  [][]string
	tfields [][]ifield
	// legs are every form in every field, the units the clause is read,
	// checked and scored by.
	legs []leg
}

// leg is one form of a clause in one field.
type leg struct {
	f     ifield
	terms []string // the form, as clauseQ.terms
	find  []string // the terms its postings are read with, as clauseQ.find
}

// newClause returns the clause of the phrases forms (the first is the
// words as given) in fields.
func newClause(forms [][]string, fields []ifield, boost float64, restrict Field) clauseQ {
	q := clauseQ{terms: forms[0], find: findTerms(forms[0]), fields: fields, boost: boost, restrict: restrict, forms: forms}
	finds := make([][]string, len(forms))
	finds[0] = q.find
	for i := 1; i < len(forms); i++ {
		finds[i] = findTerms(forms[i])
	}
	for i, form := range forms {
		for _, f := range fields {
			q.legs = append(q.legs, leg{f: f, terms: form, find: finds[i]})
		}
	}
	return q
}

// compile turns clauses into a query over the fields of lang (both
// languages when lang is empty), with the translations tr gives (none
// when nil).
func compile(clauses []clause, lang incidentlib.Lang, tr *translator) (*compiled, error) {
	c := &compiled{}
	direct := &compiled{}
	translated := false
	trans := tr.assign(clauses)
	var bonus []string // the words of the plain clauses, for the title phrase bonus
	for i, cl := range clauses {
		ts := terms(cl.text)
		if len(ts) == 0 {
			continue // only stop words or punctuation
		}
		forms := append([][]string{ts}, variants(clauses, i, ts)...)
		q := newClause(forms, indexFields(cl.field, lang), 1, cl.field)
		q0 := q
		q.legs = slices.Clip(q.legs)
		added := translate(&q, cl, trans[i], lang)
		if cl.exclude {
			c.mustNot = append(c.mustNot, q)
			direct.mustNot = append(direct.mustNot, q)
			continue
		}
		c.must = append(c.must, q)
		direct.must = append(direct.must, q0)
		translated = translated || added
		if cl.field == "" {
			bonus = append(bonus, cl.text)
		}
	}
	if len(c.must) == 0 && !slices.ContainsFunc(clauses, func(cl clause) bool { return !cl.exclude }) {
		c.all = true // a lone negation: everything but
		return c, nil
	}
	if len(c.must) == 0 {
		return nil, badQuery("the query has no word to search for: words such as %q are too common to be indexed", clauses[0].text)
	}
	if ts := terms(strings.Join(bonus, " ")); len(bonus) > 1 && len(ts) > 1 {
		// Every word of the query as one phrase in the title ranks first.
		// (A single word or phrase needs no bonus: the title's boost ranks
		// its matches first already.)
		b := newClause([][]string{ts}, indexFields(FieldTitle, lang), boostTitlePhrase, FieldTitle)
		b.find = ts
		for i := range b.legs {
			b.legs[i].find = ts
		}
		c.bonus = &b
	}
	if translated {
		direct.bonus = c.bonus
		c.direct = direct
	}
	return c, nil
}

// indexFields returns the index fields of the text fields named restrict
// (every field when empty) in lang.
func indexFields(restrict Field, lang incidentlib.Lang) []ifield {
	var out []ifield
	for i := range fields {
		f := &fields[i]
		if restrict != "" && f.name != restrict {
			continue
		}
		if lang != "" && f.lang != "" && f.lang != lang {
			continue
		}
		if !slices.Contains(out, f.index) {
			out = append(out, f.index)
		}
	}
	return out
}
