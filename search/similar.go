package search

import (
	"context"
	"encoding/json"
	"math"
	bits64 "math/bits"
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
	if err := x.turn(ctx); err != nil {
		return nil, err
	}
	defer x.turns.Release(1)
	if err := x.CatchUp(ctx); err != nil {
		return nil, err
	}
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
	type cand struct {
		score float64
		words []string
	}
	cands := map[uint32]*cand{}
	selfTotal := 0.0 // the weights of every concept self shares with some incident
	set := t.set
	for _, c := range tr.concepts {
		if !m.holds(t, c, slot) {
			continue
		}
		clear(set)
		for _, f := range c.forms {
			for _, fi := range f.fields {
				if len(f.terms) == 1 {
					if p := m.posting(fi, f.terms[0]); p != nil {
						for _, s := range p.docs {
							set[s>>6] |= 1 << (s & 63)
						}
					}
					continue
				}
				t.ms, _ = m.phraseIn(t, f.terms, fi, live, t.ms[:0])
				for _, mt := range t.ms {
					set[mt.slot>>6] |= 1 << (mt.slot & 63)
				}
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
		for w, b := range set {
			for b != 0 {
				s := uint32(w<<6 + bits64.TrailingZeros64(b))
				b &= b - 1
				num := m.slots[s].num
				if num == self {
					continue
				}
				cd := cands[num]
				if cd == nil {
					cd = &cand{}
					cands[num] = cd
				}
				cd.score += weight
				cd.words = append(cd.words, c.name)
			}
		}
	}
	clear(set)
	clear(live)
	nums := make([]uint32, 0, len(cands))
	for num := range cands {
		nums = append(nums, num)
	}
	sort.Slice(nums, func(i, j int) bool {
		a, b := cands[nums[i]], cands[nums[j]]
		if a.score != b.score {
			return a.score > b.score
		}
		return nums[i] < nums[j]
	})
	if len(nums) > n {
		nums = nums[:n]
	}
	out := make([]incidentlib.SimilarIncident, 0, len(nums))
	// The words weigh as one shared term of the rarest kind at most: the
	// share of self's concepts' weight the other holds, times ln(1 + N).
	// Long texts hold dozens of the glossary's words, and their sum would
	// drown the curated terms' ranking it is added to.
	scale := math.Log(1+float64(max(total, 1))) / selfTotal
	for _, num := range nums {
		cd := cands[num]
		out = append(out, incidentlib.SimilarIncident{ID: incidentlib.FormatID(num), Score: math.Round(cd.score*scale*1000) / 1000, SharedWords: cd.words})
	}
	return out, nil
}

// holds says whether slot holds a form of concept c.
func (m *memIndex) holds(t *topState, c concept, slot uint32) bool {
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
