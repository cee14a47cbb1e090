package search

import (
	"slices"
	"strings"
)

// Suggestions for a search that finds nothing: its English words that no
// indexed field holds, each replaced by a word one letter off (a letter
// left out, added, changed, or two neighbours swapped) that the index
// holds in the clause's fields, the most common first; a corrected query
// is given only if it finds something. Korean words get none (a syllable
// off is not a letter off, and Hangul is matched inside longer words).

// maxSuggestions bounds the corrected queries of one search.
const maxSuggestions = 5

// maxSuggestWord bounds the words corrected, in bytes.
const maxSuggestWord = 32

// suggestion is a word one letter off a word of the query.
type suggestion struct {
	word string
	term string
	df   int // incidents holding its term in the clause's fields, slots counted
}

// suggest returns up to maxSuggestions corrected queries of p (keep as for
// topK), each corrected word spelled as spell spells its term (spelling.go)
// when it can. The caller holds m's read lock.
func suggest(m *memIndex, p *prepared, keep []uint64, spell func(term string, fs []ifield) string) []string {
	out := []string{}
	fixes := map[int][]suggestion{} // by clause
	for i, cl := range p.clauses {
		if cl.exclude || cl.phrase || !isASCIILetters(cl.text, false) || len(cl.text) > maxSuggestWord {
			continue
		}
		fields := indexFields(cl.field, p.lang)
		if dfOf(m, oneTerm(cl.text), fields) > 0 {
			continue // the word is known; something else finds nothing
		}
		if s := corrections(m, strings.ToLower(cl.text), fields); len(s) > 0 {
			for j := range s {
				if w := spell(s[j].term, fields); w != "" {
					s[j].word = w
				}
			}
			fixes[i] = s
		}
	}
	if len(fixes) == 0 {
		return out
	}
	// Every misspelled word at its best correction, then each one's
	// others in turn.
	best := slices.Clone(p.clauses)
	for i, s := range fixes {
		best[i].text = s[0].word
	}
	try := func(cs []clause) {
		if len(out) == maxSuggestions {
			return
		}
		q := formatQuery(cs)
		if slices.Contains(out, q) {
			return
		}
		c, err := compile(cs, p.lang, p.tr)
		if err != nil {
			return
		}
		if _, total := topK(m, c, keep, 0, 0); total > 0 {
			out = append(out, q)
		}
	}
	try(best)
	idx := make([]int, 0, len(fixes))
	for i := range fixes {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		for _, s := range fixes[i][1:] {
			cs := slices.Clone(best)
			cs[i].text = s.word
			try(cs)
		}
	}
	return out
}

// corrections returns the words one letter off w whose term the index
// holds in fields, most common first (then alphabetically), at most a
// few.
func corrections(m *memIndex, w string, fields []ifield) []suggestion {
	seen := map[string]bool{} // terms
	var out []suggestion
	consider := func(c string) {
		t := oneTerm(c)
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		if df := dfOf(m, t, fields); df > 0 {
			out = append(out, suggestion{c, t, df})
		}
	}
	seen[oneTerm(w)] = true
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := 0; i <= len(w); i++ {
		if i < len(w) {
			consider(w[:i] + w[i+1:]) // left out
			if i+1 < len(w) && w[i] != w[i+1] {
				consider(w[:i] + string(w[i+1]) + string(w[i]) + w[i+2:]) // swapped
			}
			for _, c := range []byte(letters) {
				if c != w[i] {
					consider(w[:i] + string(c) + w[i+1:]) // changed
				}
			}
		}
		for _, c := range []byte(letters) {
			consider(w[:i] + string(c) + w[i:]) // added
		}
	}
	slices.SortFunc(out, func(a, b suggestion) int {
		if a.df != b.df {
			return b.df - a.df
		}
		return strings.Compare(a.word, b.word)
	})
	return out[:min(len(out), maxSuggestions)]
}

// dfOf is how many slots hold term in fields (0 for "").
func dfOf(m *memIndex, term string, fields []ifield) int {
	if term == "" {
		return 0
	}
	tp := m.postings[term]
	if tp == nil {
		return 0
	}
	n := 0
	for _, f := range fields {
		if p := tp[f]; p != nil {
			n += len(p.docs)
		}
	}
	return n
}

// formatQuery writes clauses back as a query.
func formatQuery(cs []clause) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if c.exclude {
			b.WriteByte('-')
		}
		if c.field != "" {
			for name, f := range prefixes {
				if f == c.field {
					b.WriteString(name + ":")
				}
			}
		}
		if c.phrase {
			b.WriteString(`"` + c.text + `"`)
		} else {
			b.WriteString(c.text)
		}
	}
	return b.String()
}
