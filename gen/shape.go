package gen

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The shape of the corpus: which organization each incident belongs to,
// when it happened, and how incidents link (recurrences and related).

// orgsAndDates draws each incident's organization and day (or none) and
// orders the incidents by day, undated last.
func (g *generator) orgsAndDates() {
	r := g.rng(streamOrgDate)
	g.org = make([]int, g.n)
	g.day = make([]int, g.n)
	for i := range g.n {
		g.org[i] = g.orgPick.pick(r)
		switch u := r.Float64(); {
		case u < UndatedShare:
			g.day[i] = -1
		case u < 0.3:
			g.day[i] = r.IntN(numDays)
		default:
			// More incidents were published in recent years: density grows
			// linearly over the twenty years.
			g.day[i] = min(int(math.Sqrt(r.Float64())*float64(numDays)), numDays-1)
		}
	}
	g.order = make([]int, g.n)
	for i := range g.order {
		g.order[i] = i
	}
	key := func(i int) int {
		if g.day[i] < 0 {
			return numDays
		}
		return g.day[i]
	}
	slices.SortFunc(g.order, func(a, b int) int {
		if d := key(a) - key(b); d != 0 {
			return d
		}
		return a - b
	})
}

// recurrences links about RecurrenceShare of the dated incidents to an
// earlier-dated incident of the same organization. Targets are always
// strictly earlier, so the links cannot form a cycle. Half the time a
// recurrence continues the organization's latest chain, so chains of three
// or more form.
func (g *generator) recurrences() {
	r := g.rng(streamRecurrence)
	g.rec = make([]int, g.n)
	for i := range g.rec {
		g.rec[i] = -1
	}
	seen := make([][]int, len(Orgs)) // dated incidents of each org in date order
	latest := make([]int, len(Orgs)) // latest recurrence of each org
	for i := range latest {
		latest[i] = -1
	}
	for _, i := range g.order {
		d := g.day[i]
		if d < 0 {
			break
		}
		o := g.org[i]
		if r.Float64() < RecurrenceShare {
			list := seen[o]
			j := len(list)
			for j > 0 && g.day[list[j-1]] == d {
				j--
			}
			if j > 0 {
				var t int
				if l := latest[o]; l >= 0 && g.day[l] < d && r.IntN(2) == 0 {
					t = l
				} else {
					t = list[j-1-r.IntN(min(5, j))]
				}
				g.rec[i] = t
				latest[o] = i
			}
		}
		seen[o] = append(seen[o], i)
	}
}

// related gives each incident 0-3 related incidents, mostly of the same
// organization or sharing a term, never itself and without duplicates.
// relatedLinks draws the related links of each record in record order
// from its own stream.
type relatedLinks struct {
	g      *generator
	r      *rand.Rand
	byOrg  [][]int32
	byTerm [][]int32
	keys   []int
}

func (g *generator) related() *relatedLinks {
	rl := &relatedLinks{g: g, r: g.rng(streamRelated), byOrg: make([][]int32, len(Orgs)), byTerm: make([][]int32, g.numTerms)}
	for i := range g.n {
		rl.byOrg[g.org[i]] = append(rl.byOrg[g.org[i]], int32(i))
		for _, key := range g.termKeys(i, nil) {
			rl.byTerm[key] = append(rl.byTerm[key], int32(i))
		}
	}
	return rl
}

// next returns the related ids of record i; it is called for every i in
// order.
func (rl *relatedLinks) next(i int) []string {
	g, r := rl.g, rl.r
	k := relCount.pick(r)
	if k == 0 || g.n == 1 {
		return nil
	}
	rl.keys = g.termKeys(i, rl.keys[:0])
	keys := rl.keys
	var rel []int
	for tries := 0; len(rel) < k && tries < 4*k; tries++ {
		var j int
		switch u := r.Float64(); {
		case u < 0.45:
			l := rl.byOrg[g.org[i]]
			j = int(l[r.IntN(len(l))])
		case u < 0.85 && len(keys) > 0:
			l := rl.byTerm[keys[r.IntN(len(keys))]]
			j = int(l[r.IntN(len(l))])
		default:
			j = r.IntN(g.n)
		}
		if j != i && !slices.Contains(rel, j) {
			rel = append(rel, j)
		}
	}
	if len(rel) == 0 {
		return nil
	}
	slices.Sort(rel)
	ids := make([]string, len(rel))
	for n, j := range rel {
		ids[n] = g.id(j)
	}
	return ids
}

// termKeys appends the global numbers of the symptom, component and root
// cause terms of incident i.
func (g *generator) termKeys(i int, keys []int) []int {
	t := &g.tm[i]
	for _, x := range t.sym {
		keys = append(keys, g.kinds[kSymptom].base+x)
	}
	for _, x := range t.comp {
		keys = append(keys, g.kinds[kComponent].base+x)
	}
	if t.rc >= 0 {
		keys = append(keys, g.kinds[kRootCause].base+t.rc)
	}
	return keys
}

func pickDistinct(r *rand.Rand, n, k int) [3]int {
	var out [3]int
	for m := 0; m < k; {
		x := r.IntN(n)
		if !slices.Contains(out[:m], x) {
			out[m] = x
			m++
		}
	}
	return out
}
