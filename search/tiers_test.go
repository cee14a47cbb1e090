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
	"github.com/incidentlib/incidentlib/seeds"
)

// TestTiersMatchExhaustive: a search through the glossary (rankTiers,
// which counts the second tier without scoring it when the first fills
// the page, reuses the first tier's candidates and checks a phrase only
// where nothing else of its clause matched) gives the page, scores and
// count of the straightforward ranking: every match of the query without
// its translations scored and sorted (eval), then every other match of
// the query with them, scored and sorted. Facets' match set
// (matchNums, counted the same way) must be eval's. The corpus is
// generated in both languages, a third of it English only and a third
// Korean only, with replaced and deleted incidents.
func TestTiersMatchExhaustive(t *testing.T) {
	tiersRandom(t, 1, 1200, 600)
}

func tiersRandom(t *testing.T, seed uint64, incidents, queries int) {
	ctx := context.Background()
	incs := generated(t, incidents, int64(seed))
	for i, inc := range incs {
		texts := []*incidentlib.Text{&inc.Title, &inc.Summary, &inc.Lessons, &inc.Trigger, &inc.Detection, &inc.SymptomsText}
		for _, tx := range texts {
			switch {
			case tx == &inc.Title && (tx.En == "" || tx.Ko == ""):
				// A title in one language at least.
			case i%3 == 0:
				tx.Ko = ""
			case i%3 == 1:
				tx.En = ""
			}
		}
	}
	db := searchStore(t, incs)
	gloss, err := seeds.GlossaryReader()
	if err != nil {
		t.Fatal(err)
	}
	x, err := Open(ctx, db.Incidents(), indexPath(db), Options{BatchSize: 64, Glossary: gloss})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	r := rand.New(rand.NewPCG(seed, 11))
	deadSlots(t, db, x, incs, r, incidents/25, incidents/60)
	tr, err := x.translator(ctx)
	if err != nil || tr == nil {
		t.Fatalf("no glossary: %v", err)
	}
	g, err := gloss.Glossary(ctx)
	if err != nil {
		t.Fatal(err)
	}

	words := func(s string) []string {
		return strings.FieldsFunc(s, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) })
	}
	// A word or phrase of a record, or a form of the glossary.
	pick := func() string {
		if r.IntN(2) == 0 {
			e := g.Entries[r.IntN(len(g.Entries))]
			forms := e.En
			if r.IntN(2) == 0 {
				forms = e.Ko
			}
			f := forms[r.IntN(len(forms))]
			if strings.Contains(f, " ") && r.IntN(3) == 0 {
				return `"` + f + `"`
			}
			return f
		}
		inc := incs[r.IntN(len(incs))]
		ws := words(inc.Title.En + " " + inc.Summary.En + " " + inc.Title.Ko + " " + inc.Summary.Ko)
		if len(ws) == 0 {
			return "outage"
		}
		i := r.IntN(len(ws))
		if r.IntN(4) == 0 && i+1 < len(ws) {
			return `"` + ws[i] + " " + ws[i+1] + `"`
		}
		return ws[i]
	}
	langs := []incidentlib.Lang{"", "", incidentlib.LangEn, incidentlib.LangKo}
	tried, translated, counted, scored, phrases := 0, 0, 0, 0, 0
	defaultSparse := sparseRatio
	defer func() { sparseRatio = defaultSparse }()
	for tried < queries {
		var parts []string
		for n := 1 + r.IntN(3); n > 0; n-- {
			p := pick()
			if r.IntN(12) == 0 {
				p = "title:" + p
			}
			if r.IntN(12) == 0 {
				p = "-" + p
			}
			parts = append(parts, p)
		}
		q := strings.Join(parts, " ")
		clauses, err := parse(q)
		if err != nil || !slices.ContainsFunc(clauses, func(cl clause) bool { return !cl.exclude }) {
			continue
		}
		lang := langs[r.IntN(len(langs))]
		c, err := compile(clauses, lang, tr)
		if err != nil {
			continue
		}
		tried++
		keep, keepBits := randomKeep(r, incidents, len(incs))
		offset, size := 0, 1+r.IntN(25)
		if r.IntN(4) == 0 {
			offset = r.IntN(100)
		}

		// The straightforward ranking.
		var want []hit
		wantTotal, wantDirect := 0, 0
		evF := eval(x.mem, c, keep)
		all := evF.top(0, evF.total)
		wantSet := evF.set()
		if c.direct == nil {
			want, wantTotal = all, evF.total
		} else {
			translated++
			evD := eval(x.mem, c.direct, keep)
			first := evD.top(0, evD.total)
			direct := evD.set()
			evD.release()
			for _, h := range all {
				if !direct.Contains(h.num) {
					first = append(first, h)
				}
			}
			want, wantTotal = first, len(first)
			wantDirect = int(direct.GetCardinality())
			if wantDirect < wantTotal && wantDirect >= offset+size {
				counted++ // the second tier counted only
			}
			if wantDirect < offset+size && wantDirect < wantTotal {
				scored++ // the second tier on the page
			}
			for _, cl := range c.must {
				if len(cl.tforms) > 0 && slices.ContainsFunc(cl.tforms, func(f []string) bool { return len(f) > 1 }) {
					phrases++
					break
				}
			}
		}
		evF.release()
		if offset < len(want) {
			want = want[offset:min(offset+size, len(want))]
		} else {
			want = nil
		}

		// Phrases checked by reading the lead posting through (ratio 0),
		// by seeking each slot when it can (1), and as the index chooses.
		for _, ratio := range []int{0, 1, defaultSparse} {
			sparseRatio = ratio
			got, total, direct := rankTiers(x.mem, c, keepBits, offset, size)
			if total != wantTotal {
				t.Fatalf("%q (lang %q, offset %d, size %d, sparse ratio %d): count %d, straightforward %d", q, lang, offset, size, ratio, total, wantTotal)
			}
			if len(got) != len(want) {
				t.Fatalf("%q (lang %q, offset %d, size %d, sparse ratio %d): %d hits, straightforward %d", q, lang, offset, size, ratio, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%q (lang %q, offset %d, size %d, sparse ratio %d): hit %d is %+v, straightforward %+v", q, lang, offset, size, ratio, i, got[i], want[i])
				}
			}
			if c.direct != nil {
				if wd := min(max(0, wantDirect-offset), size); direct != wd {
					t.Fatalf("%q: %d hits of the first tier, straightforward %d", q, direct, wd)
				}
			}
			if gotSet := roaring.BitmapOf(matchNums(x.mem, c, keepBits)...); !gotSet.Equals(wantSet) {
				t.Fatalf("%q (sparse ratio %d): the match set has %d incidents, exhaustive %d", q, ratio, gotSet.GetCardinality(), wantSet.GetCardinality())
			}
		}
	}
	// The test must exercise what it claims to.
	if translated < queries/3 || counted < queries/20 || scored < queries/20 || phrases < queries/20 {
		t.Fatalf("%d queries: %d with translations, %d with the second tier counted only, %d with it on the page, %d with translated phrases",
			tried, translated, counted, scored, phrases)
	}
	t.Logf("%d queries: %d with translations, %d with the second tier counted only, %d with it on the page, %d with translated phrases",
		tried, translated, counted, scored, phrases)
}
