package search

import (
	"context"
	"encoding/json"
	"math"
	bits64 "math/bits"
	"slices"
	"sort"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/tracing"
)

// Similar across languages. Each entry of the glossary is a concept
// whatever the language it is written in: an incident holds it when one of
// its texts holds one of the entry's forms (a phrase, in the fields of the
// form's language). SimilarByWords ranks the other incidents by the
// concepts they share with one incident, each weighted by its rarity as
// the store's Similar weighs taxonomy terms (ln(1 + N/df)), scaled so that
// all of them together weigh as one rare term, so a record written only in
// Korean is similar to one written only in English when they speak of the
// same things, and the taxonomy's terms still rank the rest.

// concept is one glossary entry, compiled for the index.
type concept struct {
	name  string // the entry's preferred English form
	forms []conceptForm
}

type conceptForm struct {
	terms  []string
	fields []ifield
}

// concepts compiles the entries of the translator's glossary.
func conceptsOf(entries [][2][]string, names []string) []concept {
	out := make([]concept, 0, len(entries))
	for i, e := range entries {
		c := concept{name: names[i]}
		for li, side := range e {
			lang := incidentlib.LangEn
			if li == 1 {
				lang = incidentlib.LangKo
			}
			fs := translationFields("", lang)
			for _, f := range side {
				if ts := terms(f); len(ts) > 0 && !containsConceptForm(c.forms, ts, fs) {
					c.forms = append(c.forms, conceptForm{terms: ts, fields: fs})
				}
			}
		}
		if len(c.forms) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func containsConceptForm(forms []conceptForm, ts []string, fs []ifield) bool {
	for _, f := range forms {
		if containsForm([][]string{f.terms}, ts) && f.fields[0] == fs[0] {
			return true
		}
	}
	return false
}

// SimilarByWords returns up to n incidents that share the most (and the
// rarest) glossary concepts with incident id, in either language, best
// first; only the incidents lists show are ranked and counted (the
// store's set of the empty filter, as for searches). Without a glossary
// it returns none. Returns EINVALID for n out of 0..MaxPageSize and
// ENOTFOUND for an id the index does not hold.
func (x *Index) SimilarByWords(ctx context.Context, id string, n int) ([]incidentlib.SimilarIncident, error) {
	ctx, span := tracing.Start(ctx, "search.similar")
	defer span.End()
	if n < 0 || n > incidentlib.MaxPageSize {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"first"}, "first must be between 0 and %d, got %d", incidentlib.MaxPageSize, n)
	}
	self, ok := incidentlib.ParseID(id)
	if !ok {
		return nil, incidentlib.Errorf(incidentlib.ENOTFOUND, "incident %q not found", id)
	}
	tr, err := x.translator(ctx)
	if err != nil || tr == nil || n == 0 {
		return nil, err
	}
	if err := x.turnCaughtUp(ctx); err != nil {
		return nil, err
	}
	defer x.turns.Release(1)
	filterJSON, _ := json.Marshal(incidentlib.IncidentFilter{})
	listed, err := x.filterBits(ctx, &prepared{filterJSON: string(filterJSON)})
	if err != nil {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	m := x.mem
	slot, ok := m.byNum[self]
	if !ok {
		return nil, incidentlib.Errorf(incidentlib.ENOTFOUND, "incident %s not found", id)
	}
	t := topStates.Get().(*topState)
	defer topStates.Put(t)
	words := len(m.slots)/64 + 1
	t.resize(words, len(m.slots))
	// The live, listed slots (self aside, counted in df as the store does).
	live := t.tmp
	total := 0
	for s := range m.slots {
		sl := &m.slots[s]
		if sl.seq != 0 && int(sl.num>>6) < len(listed) && listed[sl.num>>6]&(1<<(sl.num&63)) != 0 {
			live[s>>6] |= 1 << (s & 63)
			total++
		}
	}
	score := t.score // by slot; cleared before returning
	defer clear(score)
	var held []int   // the concepts self holds that some other incident holds
	selfTotal := 0.0 // their weights
	set := t.set
	for ci := range tr.concepts {
		c := &tr.concepts[ci]
		if !m.holds(t, c, slot) {
			continue
		}
		// The slots holding every term of one of c's forms (a phrase's
		// terms anywhere in the field: close enough to rank by, and no
		// positions read).
		clear(set)
		for _, f := range c.forms {
			for _, fi := range f.fields {
				m.allTerms(f.terms, fi, set)
			}
		}
		df := 0
		for w := range set {
			set[w] &= live[w]
			df += bits64.OnesCount64(set[w])
		}
		if !has(live, slot) {
			df++ // self, unlisted but readable by id, counts as the store's Similar counts it
		}
		if df <= 1 {
			continue
		}
		weight := math.Log(1 + float64(max(total, 1))/float64(df))
		selfTotal += weight
		held = append(held, ci)
		for w, b := range set {
			for b != 0 {
				s := w<<6 + bits64.TrailingZeros64(b)
				b &= b - 1
				score[s] += weight
			}
		}
	}
	clear(set)
	clear(live)
	score[slot] = 0
	var best []uint32
	for s, v := range score {
		if v > 0 {
			best = append(best, uint32(s))
		}
	}
	sort.Slice(best, func(i, j int) bool {
		a, b := score[best[i]], score[best[j]]
		if a != b {
			return a > b
		}
		return m.slots[best[i]].num < m.slots[best[j]].num
	})
	if len(best) > n {
		best = best[:n]
	}
	// The words weigh as one shared term of the rarest kind at most: the
	// share of self's concepts' weight the other holds, times ln(1 + N).
	// Long texts hold dozens of the glossary's words, and their sum would
	// drown the curated terms' ranking it is added to.
	scale := math.Log(1+float64(max(total, 1))) / selfTotal
	out := make([]incidentlib.SimilarIncident, 0, len(best))
	for _, s := range best {
		sim := incidentlib.SimilarIncident{ID: incidentlib.FormatID(m.slots[s].num), Score: math.Round(score[s]*scale*1000) / 1000, SharedWords: []string{}}
		for _, ci := range held {
			if c := &tr.concepts[ci]; m.holdsAll(c, s) {
				sim.SharedWords = append(sim.SharedWords, c.name)
			}
		}
		out = append(out, sim)
	}
	return out, nil
}

// allTerms sets in dst the slots whose field f holds every term of ts.
func (m *memIndex) allTerms(ts []string, f ifield, dst []uint64) {
	var ps [8]*posting
	list := m.postingsOf(ts, f, ps[:0])
	if len(list) == 0 {
		return
	}
	var idx [8]int
	iter := idx[:]
	if len(list) > len(idx) {
		iter = make([]int, len(list))
	}
lead:
	for _, s := range list[0].docs {
		for j := 1; j < len(list); j++ {
			iter[j] = gallop(list[j].docs, iter[j], s)
			if iter[j] == len(list[j].docs) {
				return
			}
			if list[j].docs[iter[j]] != s {
				continue lead
			}
		}
		dst[s>>6] |= 1 << (s & 63)
	}
}

// holdsAll says whether slot's field holds every term of one of c's
// forms, as SimilarByWords counted it.
func (m *memIndex) holdsAll(c *concept, slot uint32) bool {
	for _, f := range c.forms {
	field:
		for _, fi := range f.fields {
			for _, term := range f.terms {
				if term == "" {
					continue
				}
				p := m.posting(fi, term)
				if p == nil {
					continue field
				}
				if _, ok := slices.BinarySearch(p.docs, slot); !ok {
					continue field
				}
			}
			return true
		}
	}
	return false
}

// holds says whether slot holds a form of concept c.
func (m *memIndex) holds(t *topState, c *concept, slot uint32) bool {
	for _, f := range c.forms {
		for _, fi := range f.fields {
			if len(f.terms) == 1 {
				if p := m.posting(fi, f.terms[0]); p != nil {
					if i := sort.Search(len(p.docs), func(i int) bool { return p.docs[i] >= slot }); i < len(p.docs) && p.docs[i] == slot {
						return true
					}
				}
				continue
			}
			if m.phraseFreqAt(t, f.terms, fi, slot) > 0 {
				return true
			}
		}
	}
	return false
}
