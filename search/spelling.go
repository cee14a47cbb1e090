package search

import (
	"context"
	"strings"
)

// Suggestions are words as the library writes them. A correction is
// found by its term (stemmed: keepale and keepalive are one term), so the
// candidate that made it may be no word at all; spelling finds the term
// in the text of an incident that holds it and gives the word there,
// lowercased (keepalive). A word whose text cannot be read, or that does
// not analyze to the term alone, stays the candidate.

// spelling returns a function that spells a term of fields as the
// library writes it, or "" when it cannot. It reads the records of x's
// store; the caller holds x.mu's read lock.
func (x *Index) spelling(ctx context.Context) func(term string, fs []ifield) string {
	return func(term string, fs []ifield) string {
		tp := x.mem.postings[term]
		if tp == nil {
			return ""
		}
		for _, f := range fs {
			p := tp[f]
			if p == nil {
				continue
			}
			for _, slot := range p.docs {
				sl := x.mem.slots[slot]
				if sl.seq == 0 {
					continue // dead
				}
				if w := x.spellIn(ctx, sl.num, term, f); w != "" {
					return w
				}
				break // one live incident per field is enough
			}
		}
		return ""
	}
}

// spellIn returns the first word of incident num's text in f whose term
// is term, lowercased, or "".
func (x *Index) spellIn(ctx context.Context, num uint32, term string, f ifield) string {
	recs, err := x.db.RecordsByNumber(ctx, []uint32{num})
	if err != nil || len(recs) != 1 {
		return ""
	}
	inc := recs[0].Decoded
	if inc == nil {
		if recs[0].Raw == nil {
			return ""
		}
		if inc, err = textsOf(recs[0].Raw); err != nil {
			return ""
		}
	}
	for i := range fields {
		if fields[i].index != f {
			continue
		}
		text := fields[i].text(inc)
		for _, tok := range analyze(text) {
			if tok.Term != term {
				continue
			}
			w := strings.ToLower(text[tok.Start:tok.End])
			if isASCIILetters(w, true) && oneTerm(w) == term {
				return w
			}
		}
	}
	return ""
}
