package testutil

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
)

// The brute-force oracle of filters (set filters included) that the
// differential tests hold the store's indexes, the subscriptions and the
// server's paths to. It reads the records only, one by one, and is
// written from the documented semantics (docs/graph.md, "Set filters"),
// sharing no code with the store or package filterexpr.

// FilterOracle evaluates filters over a fixed set of records.
type FilterOracle struct {
	incs []*incidentlib.Incident
	// listedRec: the incident ids some listed (not withdrawn) incident is
	// a recurrence of.
	listedRec map[string]bool
}

// NewFilterOracle is the oracle over incs (the whole store).
func NewFilterOracle(incs []*incidentlib.Incident) *FilterOracle {
	o := &FilterOracle{incs: incs, listedRec: map[string]bool{}}
	for _, inc := range incs {
		if inc.RecurrenceOf != "" && inc.State() != incidentlib.ReviewWithdrawn {
			o.listedRec[inc.RecurrenceOf] = true
		}
	}
	return o
}

// Select is the sorted ids of the incidents f selects.
func (o *FilterOracle) Select(f incidentlib.IncidentFilter) []string {
	out := []string{}
	for _, inc := range o.incs {
		if o.Matches(inc, f) {
			out = append(out, inc.ID)
		}
	}
	sort.Strings(out)
	return out
}

// Matches says whether f selects inc: inc satisfies the expression, and
// is not withdrawn unless some node outside any not that names WITHDRAWN
// or gives ids is satisfied by it.
func (o *FilterOracle) Matches(inc *incidentlib.Incident, f incidentlib.IncidentFilter) bool {
	if !o.holds(inc, &f) {
		return false
	}
	return inc.State() != incidentlib.ReviewWithdrawn || o.asked(inc, &f, false)
}

func (o *FilterOracle) asked(inc *incidentlib.Incident, n *incidentlib.IncidentFilter, negated bool) bool {
	if !negated && (len(n.IDs) > 0 || slices.Contains(n.ReviewStates, incidentlib.ReviewWithdrawn)) && o.holds(inc, n) {
		return true
	}
	if n.Not != nil && o.asked(inc, n.Not, !negated) {
		return true
	}
	for i := range n.Or {
		if o.asked(inc, &n.Or[i], negated) {
			return true
		}
	}
	return false
}

// holds is the expression n on inc, visibility aside.
func (o *FilterOracle) holds(inc *incidentlib.Incident, n *incidentlib.IncidentFilter) bool {
	if !o.plain(inc, n) {
		return false
	}
	if n.Not != nil && o.holds(inc, n.Not) {
		return false
	}
	if len(n.Or) == 0 {
		return true
	}
	for i := range n.Or {
		if o.holds(inc, &n.Or[i]) {
			return true
		}
	}
	return false
}

func (o *FilterOracle) plain(inc *incidentlib.Incident, n *incidentlib.IncidentFilter) bool {
	anyOf := func(list []string, have ...string) bool {
		if len(list) == 0 {
			return true
		}
		for _, h := range have {
			if h != "" && slices.Contains(list, h) {
				return true
			}
		}
		return false
	}
	flag := func(b *bool, v bool) bool { return b == nil || *b == v }
	state := inc.State()
	switch {
	case !anyOf(n.IDs, inc.ID), !anyOf(n.Organizations, inc.OrgSlug),
		!anyOf(n.Domains, inc.Domain...), !anyOf(n.Symptoms, inc.Symptoms...),
		!anyOf(n.Components, inc.Components...), !anyOf(n.RootCauses, inc.RootCause),
		!anyOf(n.Contributing, inc.Contributing...), !anyOf(n.Severities, inc.Severity):
		return false
	case n.DateFrom != nil && (inc.Date == "" || inc.Date < *n.DateFrom),
		n.DateTo != nil && (inc.Date == "" || inc.Date > *n.DateTo):
		return false
	case !flag(n.Reviewed, state == incidentlib.ReviewReviewed),
		len(n.ReviewStates) > 0 && !slices.Contains(n.ReviewStates, state),
		!flag(n.IsRecurrence, inc.RecurrenceOf != ""),
		!flag(n.HasRecurrences, o.listedRec[inc.ID]):
		return false
	}
	if len(n.Verification) > 0 && !slices.Contains(n.Verification, inc.Verification.OrUnknown()) {
		return false
	}
	if n.UpdatedSince != nil {
		since, err1 := time.Parse(time.RFC3339Nano, *n.UpdatedSince)
		at, err2 := time.Parse(time.RFC3339Nano, inc.UpdatedAt)
		if err1 != nil || err2 != nil || at.Before(since) {
			return false
		}
	}
	return true
}

// FilterCorpus is n generated incidents (Corpus) made to exercise every
// field of a filter: a share withdrawn and in every other review state,
// more undated ones, every verification, more recurrences.
func FilterCorpus(tb testing.TB, n int, seed uint64) []*incidentlib.Incident {
	tb.Helper()
	incs := Corpus(tb, n, int64(seed))
	rng := rand.New(rand.NewPCG(seed, 34))
	for i, inc := range incs {
		inc.ReviewState = incidentlib.ReviewStates[rng.IntN(len(incidentlib.ReviewStates))]
		if inc.ReviewState == incidentlib.ReviewReviewed && inc.Review.ReviewedAt == "" {
			inc.Review.ReviewedAt = "2025-01-01T00:00:00Z"
		}
		inc.Verification = incidentlib.Verifications[rng.IntN(len(incidentlib.Verifications))]
		if rng.IntN(8) == 0 {
			inc.Date = ""
		}
		if j := rng.IntN(i + 1); j < i && inc.RecurrenceOf == "" && incs[j].RecurrenceOf == "" && rng.IntN(6) == 0 {
			inc.RecurrenceOf = incs[j].ID // to one that is a recurrence of none: no cycle
		}
	}
	return incs
}

// RandomFilter is a random filter over the values of incs: plain fields of
// every kind, and not and or nested to depth levels at most, within
// filterexpr's bounds (nodes counts the filters made so far).
func RandomFilter(rng *rand.Rand, incs []*incidentlib.Incident, depth int) incidentlib.IncidentFilter {
	nodes := 0
	return randomNode(rng, incs, depth, &nodes)
}

// maxRandomNodes keeps RandomFilter within filterexpr.MaxNodes (32).
const maxRandomNodes = 24

func randomNode(rng *rand.Rand, incs []*incidentlib.Incident, depth int, nodes *int) incidentlib.IncidentFilter {
	*nodes++
	var f incidentlib.IncidentFilter
	pick := func() *incidentlib.Incident { return incs[rng.IntN(len(incs))] }
	some := func(get func(*incidentlib.Incident) []string) []string {
		var out []string
		for range 1 + rng.IntN(3) {
			if vs := get(pick()); len(vs) > 0 {
				out = append(out, vs[rng.IntN(len(vs))])
			}
		}
		if len(out) == 0 {
			out = []string{"no-such-slug"}
		}
		return out
	}
	date := func() *string {
		s := time.Date(2004+rng.IntN(24), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
		return &s
	}
	boolean := func() *bool { b := rng.IntN(2) == 0; return &b }
	for range rng.IntN(3) {
		switch rng.IntN(16) {
		case 0:
			f.IDs = some(func(i *incidentlib.Incident) []string { return []string{i.ID} })
		case 1:
			f.Organizations = some(func(i *incidentlib.Incident) []string { return []string{i.OrgSlug} })
		case 2:
			f.Domains = some(func(i *incidentlib.Incident) []string { return i.Domain })
		case 3:
			f.Symptoms = some(func(i *incidentlib.Incident) []string { return i.Symptoms })
		case 4:
			f.Components = some(func(i *incidentlib.Incident) []string { return i.Components })
		case 5:
			f.RootCauses = some(func(i *incidentlib.Incident) []string { return []string{i.RootCause} })
		case 6:
			f.Contributing = some(func(i *incidentlib.Incident) []string { return i.Contributing })
		case 7:
			f.Severities = some(func(i *incidentlib.Incident) []string { return []string{i.Severity} })
		case 8:
			f.DateFrom = date()
		case 9:
			f.DateTo = date()
		case 10:
			s := pick().UpdatedAt
			f.UpdatedSince = &s
		case 11:
			f.Reviewed = boolean()
		case 12, 13:
			for _, s := range incidentlib.ReviewStates {
				if rng.IntN(3) == 0 {
					f.ReviewStates = append(f.ReviewStates, s)
				}
			}
		case 14:
			if rng.IntN(2) == 0 {
				f.IsRecurrence = boolean()
			} else {
				f.HasRecurrences = boolean()
			}
		case 15:
			for _, v := range incidentlib.Verifications {
				if rng.IntN(3) == 0 {
					f.Verification = append(f.Verification, v)
				}
			}
		}
	}
	if depth == 0 {
		return f
	}
	if rng.IntN(3) == 0 && *nodes < maxRandomNodes {
		n := randomNode(rng, incs, depth-1, nodes)
		f.Not = &n
	}
	if rng.IntN(3) == 0 {
		f.Or = []incidentlib.IncidentFilter{} // an empty or: no constraint
		for range rng.IntN(4) {
			if *nodes >= maxRandomNodes {
				break
			}
			f.Or = append(f.Or, randomNode(rng, incs, depth-1, nodes))
		}
	}
	return f
}
