package search

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// TestTopKMatchesExhaustive compares the pruned page (topK) with ranking
// every match (eval, then top) on random queries over a generated corpus
// with replaced and deleted incidents: the same slots, in the same order,
// with bit-equal scores, and the same count and match set (facets').
func TestTopKMatchesExhaustive(t *testing.T) {
	incs := generated(t, 1500, 3)
	db := searchStore(t, incs)
	x := mustOpen(t, db)
	r := rand.New(rand.NewPCG(3, 9))
	deadSlots(t, db, x, incs, r, 60, 20)

	words := func(s string) []string {
		return strings.FieldsFunc(s, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) })
	}
	pick := func() string {
		inc := incs[r.IntN(len(incs))]
		var ws []string
		switch r.IntN(5) {
		case 0, 4:
			ws = words(inc.Title.En)
		case 1:
			ws = words(inc.Summary.En + " " + inc.Lessons.En)
		case 2:
			ws = words(inc.Title.Ko + " " + inc.Summary.Ko)
		default:
			ws = words(inc.Org + " " + inc.Trigger.En)
		}
		if len(ws) == 0 {
			return "outage"
		}
		i := r.IntN(len(ws))
		switch r.IntN(6) {
		case 0, 1:
			if i+1 < len(ws) {
				return `"` + ws[i] + " " + ws[i+1] + `"`
			}
		case 2:
			if i+2 < len(ws) {
				return `"` + ws[i] + " " + ws[i+1] + " " + ws[i+2] + `"`
			}
		case 3:
			if i+1 < len(ws) && r.IntN(2) == 0 {
				// Adjacent words of a title, unquoted: the title-phrase
				// bonus decides the order.
				return ws[i] + " " + ws[i+1]
			}
			w := []rune(ws[i])
			if len(w) > 2 {
				return string(w[:2+r.IntN(len(w)-1)])
			}
		}
		return ws[i]
	}
	prefixes := []string{"", "", "", "", "title:", "lessons:", "org:"}
	langs := []incidentlib.Lang{"", "", incidentlib.LangEn, incidentlib.LangKo}
	tried, nonEmpty, withBonus, bounded, trigrams := 0, 0, 0, 0, 0
	defaultRatio := bonusPassRatio
	defer func() { bonusPassRatio = defaultRatio }()
	for tried < 1500 {
		var parts []string
		for n := 1 + r.IntN(4); n > 0; n-- {
			p := pick()
			if r.IntN(8) == 0 {
				p = prefixes[4+r.IntN(3)] + p
			}
			if r.IntN(10) == 0 {
				p = "-" + p
			}
			parts = append(parts, p)
		}
		clauses, err := parse(strings.Join(parts, " "))
		if err != nil || !slices.ContainsFunc(clauses, func(cl clause) bool { return !cl.exclude }) {
			continue // a lone negation (everything but): TestBadQueries/OnlyExclusions
		}
		c, err := compile(clauses, langs[r.IntN(len(langs))], nil)
		if err != nil {
			continue
		}
		tried++
		keep, keepBits := randomKeep(r, 600, len(incs))
		offset, size := 0, 1+r.IntN(25)
		if r.IntN(3) == 0 {
			size = 1 + r.IntN(incidentlib.MaxPageSize)
		}
		if r.IntN(4) == 0 {
			offset = r.IntN(200)
		}
		ev := eval(x.mem, c, keep)
		want := ev.top(offset, size)
		wantTotal := ev.total
		wantSet := ev.set()
		ev.release()
		if got := roaring.BitmapOf(matchNums(x.mem, c, keepBits)...); !got.Equals(wantSet) {
			t.Fatalf("%q: the match set has %d incidents, exhaustive %d", strings.Join(parts, " "), got.GetCardinality(), wantSet.GetCardinality())
		}
		q := strings.Join(parts, " ")
		// The title-phrase bonus checked one slot at a time (ratio 0),
		// in one pass (a huge ratio), and as the index chooses.
		for _, ratio := range []int{0, 1 << 30, defaultRatio} {
			bonusPassRatio = ratio
			got, total := topK(x.mem, c, keepBits, offset, size)
			if total != wantTotal {
				t.Fatalf("%q (offset %d, size %d, bonus pass ratio %d): count %d, exhaustive %d", q, offset, size, ratio, total, wantTotal)
			}
			if len(got) != len(want) {
				t.Fatalf("%q (offset %d, size %d, bonus pass ratio %d): %d hits, exhaustive %d", q, offset, size, ratio, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%q (offset %d, size %d, bonus pass ratio %d): hit %d is %+v, exhaustive %+v", q, offset, size, ratio, i, got[i], want[i])
				}
			}
		}
		if wantTotal > 0 {
			nonEmpty++
			for _, cl := range c.must {
				if !slices.Equal(cl.find, cl.terms) {
					trigrams++ // read with trigrams, compared with eval's bigrams
					break
				}
			}
		}
		if c.bonus != nil && wantTotal > 0 {
			withBonus++
			bounded += checkBonusBounds(t, x.mem, c, keepBits, q)
		}
	}
	// The test must exercise what it claims to.
	if nonEmpty < 300 || withBonus < 50 || bounded < 100 || trigrams < 50 {
		t.Fatalf("only %d queries found something, %d with the title-phrase bonus, %d slots with a bonus checked against its bound, %d read with Hangul trigrams", nonEmpty, withBonus, bounded, trigrams)
	}
	t.Logf("%d queries, %d found something, %d with the title-phrase bonus, %d read with Hangul trigrams", tried, nonEmpty, withBonus, trigrams)
}

// randomKeep returns, one time in three, a filter of up to most incident
// numbers up to n+10 drawn with r, as a bitmap and as bits; else nils.
func randomKeep(r *rand.Rand, most, n int) (*roaring.Bitmap, []uint64) {
	if r.IntN(3) != 0 {
		return nil, nil
	}
	keep := roaring.New()
	for range 1 + r.IntN(most) {
		keep.Add(uint32(1 + r.IntN(n+10)))
	}
	return keep, keep.ToDense()
}

// deadSlots gives x dead slots: up to replace of incs replaced by
// another's title and summary, up to del deleted (drawn with r).
func deadSlots(t *testing.T, db *storage.DB, x *Index, incs []*incidentlib.Incident, r *rand.Rand, replace, del int) {
	t.Helper()
	ctx := context.Background()
	var changed []*incidentlib.Incident
	seen := map[string]bool{}
	for i := 0; i < replace; i++ {
		a, b := incs[r.IntN(len(incs))], incs[r.IntN(len(incs))]
		if seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		c := *a
		c.Title, c.Summary = b.Title, b.Summary
		changed = append(changed, &c)
	}
	if _, err := db.Incidents().ImportIncidents(ctx, changed, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < del; i++ {
		db.Incidents().DeleteIncident(ctx, incs[r.IntN(len(incs))].ID, incidentlib.WriteOptions{})
	}
	if err := x.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if x.mem.dead == 0 {
		t.Fatal("no dead slots to test with")
	}
}

// checkBonusBounds: for every match of c, the title-phrase bonus it gets
// is at most the upper bound topK prunes with, and only marked slots get
// one. It returns how many slots had a bonus.
func checkBonusBounds(t *testing.T, m *memIndex, c *compiled, keep []uint64, q string) int {
	t.Helper()
	st := &topState{}
	st.matches(m, c, keep, matchOpts{})
	for _, f := range c.bonus.fields {
		m.bonusBounds(st, c.bonus, f, st.set)
	}
	checked := 0
	for s := range uint32(len(m.slots)) {
		if !has(st.set, s) {
			continue
		}
		actual := 0.0
		for _, f := range c.bonus.fields {
			if freq := m.phraseFreqAt(st, c.bonus.terms, f, s); freq > 0 {
				bm := m.bm25Of(f)
				w := c.bonus.boost * ifieldBoost[f] * m.phraseIDF(c.bonus.terms, f) * (bm25K1 + 1)
				tf := float64(freq)
				actual += w * tf / (tf + bm.base + bm.norm*float64(bm.lens[s]))
			}
		}
		if actual == 0 {
			continue
		}
		checked++
		if !has(st.bonus, s) {
			t.Fatalf("%q: slot %d gets a bonus of %g but is not marked", q, s, actual)
		}
		if ub := st.ub[s]; actual > ub+ub*boundSlack {
			t.Fatalf("%q: slot %d gets a bonus of %g over its bound %g", q, s, actual, ub)
		}
	}
	return checked
}
