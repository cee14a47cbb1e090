// Package gen generates a deterministic synthetic corpus of incidents for
// tests and benchmarks.
//
// The corpus looks like the library's real records: organizations follow a
// Zipf-like distribution (a few hold a large share), taxonomy terms are
// skewed so that some are common and others rare, texts are written from
// templates in English and Korean (mostly both, some in one language only),
// and incidents link to each other through related and recurrence_of.
//
// The same Options always give the same corpus, byte for byte: all
// randomness comes from math/rand/v2 PCG sources seeded from Options.Seed.
package gen

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// Options control Generate.
type Options struct {
	Count    int    // number of incidents (>= 1)
	Seed     int64  // same seed, same corpus, byte for byte
	FirstID  uint32 // number of the first id; 0 means 1 -> IL-0001
	Taxonomy *incidentlib.Taxonomy
}

// Shares and ranges of the corpus. Tests check the generated corpus against
// them.
const (
	UndatedShare    = 0.03 // incidents without a date
	EnglishOnly     = 0.10 // texts in English only
	KoreanOnly      = 0.05 // texts in Korean only
	RecurrenceShare = 0.08 // incidents with recurrence_of (approximate)
	ReviewedShare   = 0.30 // incidents with review.reviewed_at
	MaxTitleRunes   = 149  // titles are shorter than 150 characters
	MinSummaryRunes = 300  // English summaries are at least this long
	WrittenBy       = "gen"
	CaseURLPrefix   = "https://incidentlib.example/cases/"
)

var (
	firstDate  = time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC)
	lastDate   = time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)
	numDays    = int(lastDate.Sub(firstDate)/(24*time.Hour)) + 1
	updatedMin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	updatedMax = time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// Random streams, one per phase, so that changing one phase does not shift
// the others.
const (
	streamSetup uint64 = iota + 1
	streamOrgDate
	streamRecurrence
	streamTerms
	streamText
	streamRelated
)

// Generate returns opts.Count incidents with ids FormatID(FirstID),
// FormatID(FirstID+1), ... Every record passes Validate and
// ValidateTerms(opts.Taxonomy). Kinds the taxonomy lacks are left empty.
func Generate(opts Options) ([]*incidentlib.Incident, error) {
	if opts.Count < 1 {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "gen: count must be at least 1, not %d", opts.Count)
	}
	if opts.Taxonomy == nil {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "gen: a taxonomy is required")
	}
	first := opts.FirstID
	if first == 0 {
		first = 1
	}
	if uint64(first)+uint64(opts.Count)-1 > incidentlib.MaxIDNumber {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "gen: ids from %d for %d incidents exceed the largest id", first, opts.Count)
	}
	g := &generator{seed: uint64(opts.Seed), n: opts.Count, first: first, tax: opts.Taxonomy}
	g.setup()
	g.orgsAndDates()
	g.recurrences()
	g.terms()
	g.records()
	g.related()
	return g.out, nil
}

// WriteJSONL writes one json.Marshal(inc) per line.
func WriteJSONL(w io.Writer, incs []*incidentlib.Incident) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, inc := range incs {
		b, err := json.Marshal(inc)
		if err != nil {
			return err
		}
		bw.Write(b)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// sampler draws indices 0..n-1 with given weights.
type sampler []float64 // cumulative weights

func zipf(n int, s float64) sampler {
	cum := make(sampler, n)
	t := 0.0
	for i := range cum {
		t += 1 / math.Pow(float64(i+1), s)
		cum[i] = t
	}
	return cum
}

func weights(w ...float64) sampler {
	cum := make(sampler, len(w))
	t := 0.0
	for i, x := range w {
		t += x
		cum[i] = t
	}
	return cum
}

func (s sampler) pick(r *rand.Rand) int {
	i := sort.SearchFloat64s(s, r.Float64()*s[len(s)-1])
	return min(i, len(s)-1)
}

// kindTerms are the terms of one kind in order of popularity.
type kindTerms struct {
	terms []*incidentlib.Term
	en    []string // labels for English sentences
	ko    []string
	base  int // offset of the kind's terms in the global term numbering
	pick  sampler
}

type lang uint8

const (
	langBoth lang = iota
	langEn
	langKo
)

type recTerms struct {
	dom, sym, comp, con []int
	rc, sev             int // -1: none
}

type generator struct {
	seed  uint64
	n     int
	first uint32
	tax   *incidentlib.Taxonomy

	kinds    [6]kindTerms // by position in incidentlib.TermKinds
	numTerms int
	orgPick  sampler

	org   []int
	day   []int // days since firstDate, -1 undated
	rec   []int // recurrence target, -1 none
	order []int // indices by (day, index), undated last
	tm    []recTerms
	out   []*incidentlib.Incident
}

const (
	kDomain = iota
	kSymptom
	kComponent
	kRootCause
	kContributing
	kSeverity
)

func (g *generator) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(g.seed, stream*0x9E3779B97F4A7C15))
}

func (g *generator) setup() {
	r := g.rng(streamSetup)
	g.orgPick = zipf(len(Orgs), 1.07)
	for k, kind := range incidentlib.TermKinds {
		list := g.tax.Kind(kind) // ordered by slug
		kt := &g.kinds[k]
		kt.base = g.numTerms
		g.numTerms += len(list)
		if len(list) == 0 {
			continue
		}
		// Which terms are popular depends on the seed, not on the alphabet.
		kt.terms = make([]*incidentlib.Term, len(list))
		for i, p := range r.Perm(len(list)) {
			kt.terms[i] = list[p]
		}
		kt.en = make([]string, len(list))
		kt.ko = make([]string, len(list))
		for i, t := range kt.terms {
			e, k := t.Label.En, t.Label.Ko
			if e == "" {
				e = k
			}
			if k == "" {
				k = e
			}
			kt.en[i], kt.ko[i] = lowerFirst(e), k
		}
		kt.pick = zipf(len(list), 1.0)
	}
}

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

var (
	domCount  = weights(70, 30)            // 1..2
	manyCount = weights(35, 35, 20, 10)    // 1..4
	conCount  = weights(30, 35, 25, 10)    // 0..3
	relCount  = weights(40, 30, 18, 12)    // 0..3
	itemCount = weights(30, 30, 20, 12, 8) // 0..4
)

// pickTerms draws k distinct popular-skewed terms of a kind.
func (kt *kindTerms) pickTerms(r *rand.Rand, k int) []int {
	k = min(k, len(kt.terms))
	if k <= 0 {
		return nil
	}
	out := make([]int, 0, k)
	for tries := 0; len(out) < k && tries < 60; tries++ {
		if t := kt.pick.pick(r); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for t := 0; len(out) < k; t++ {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func (kt *kindTerms) pickOne(r *rand.Rand) int {
	if len(kt.terms) == 0 {
		return -1
	}
	return kt.pick.pick(r)
}

// terms draws the terms of every incident, targets of recurrences first so
// that a recurrence can share its target's root cause and main component.
func (g *generator) terms() {
	r := g.rng(streamTerms)
	g.tm = make([]recTerms, g.n)
	for _, i := range g.order {
		t := &g.tm[i]
		t.dom = g.kinds[kDomain].pickTerms(r, 1+domCount.pick(r))
		t.sym = g.kinds[kSymptom].pickTerms(r, 1+manyCount.pick(r))
		t.comp = g.kinds[kComponent].pickTerms(r, 1+manyCount.pick(r))
		t.con = g.kinds[kContributing].pickTerms(r, conCount.pick(r))
		t.rc = g.kinds[kRootCause].pickOne(r)
		t.sev = g.kinds[kSeverity].pickOne(r)
		if p := g.rec[i]; p >= 0 {
			pt := &g.tm[p]
			t.rc = pt.rc
			if len(pt.comp) > 0 && !slices.Contains(t.comp, pt.comp[0]) {
				t.comp = append([]int{pt.comp[0]}, t.comp...)
				t.comp = t.comp[:min(len(t.comp), 4)]
			}
		}
	}
}

func (kt *kindTerms) slugs(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	out := make([]string, len(idx))
	for n, i := range idx {
		out[n] = kt.terms[i].Slug
	}
	return out
}

func (kt *kindTerms) slug(i int) string {
	if i < 0 {
		return ""
	}
	return kt.terms[i].Slug
}

// label returns the labels of term idx[n], or def when there is none.
func (kt *kindTerms) label(idx []int, n int, def pair) [2]string {
	if n >= len(idx) {
		return [2]string{def.en, def.ko}
	}
	return [2]string{kt.en[idx[n]], kt.ko[idx[n]]}
}

func (g *generator) id(i int) string { return incidentlib.FormatID(g.first + uint32(i)) }

var dateStrings = func() []string {
	out := make([]string, numDays)
	for d := range out {
		out[d] = firstDate.AddDate(0, 0, d).Format(time.DateOnly)
	}
	return out
}()

func (g *generator) records() {
	r := g.rng(streamText)
	block := make([]incidentlib.Incident, g.n)
	g.out = make([]*incidentlib.Incident, g.n)
	var c textCtx
	buf := make([]byte, 0, 1024)
	for i := range g.n {
		inc := &block[i]
		g.out[i] = inc
		o := Orgs[g.org[i]]
		t := &g.tm[i]
		inc.ID = g.id(i)
		inc.Org, inc.OrgSlug = o.Name, o.Slug
		if d := g.day[i]; d >= 0 {
			inc.Date, inc.DateKind = dateStrings[d], "incident"
		}
		kd := &g.kinds
		inc.Domain = kd[kDomain].slugs(t.dom)
		inc.Symptoms = kd[kSymptom].slugs(t.sym)
		inc.Components = kd[kComponent].slugs(t.comp)
		inc.Contributing = kd[kContributing].slugs(t.con)
		inc.RootCause = kd[kRootCause].slug(t.rc)
		inc.Severity = kd[kSeverity].slug(t.sev)
		if p := g.rec[i]; p >= 0 {
			inc.RecurrenceOf = g.id(p)
		}
		inc.URL = CaseURLPrefix + inc.ID

		// Timeline.
		resolved, detected := 0, 0
		if r.Float64() >= 0.10 {
			resolved = resolvedMinutes(r)
			inc.Timeline.ResolvedAfter = durValue(resolved)
		}
		if r.Float64() >= 0.25 {
			detected = detectedMinutes(r)
			inc.Timeline.DetectedAfter = durValue(detected)
		}

		// Slot values.
		c.has = 0
		c.v[sOrg] = [2]string{o.Name, o.Name}
		c.v[sDom] = kd[kDomain].label(t.dom, 0, pair{"production", "운영"})
		c.v[sSym] = kd[kSymptom].label(t.sym, 0, pair{"errors", "오류"})
		c.v[sComp] = kd[kComponent].label(t.comp, 0, pair{"backend", "백엔드"})
		if len(t.sym) > 1 {
			c.v[sSym2] = kd[kSymptom].label(t.sym, 1, pair{})
			c.has |= needSym2
		}
		if len(t.comp) > 1 {
			c.v[sComp2] = kd[kComponent].label(t.comp, 1, pair{})
			c.has |= needComp2
		}
		if len(t.con) > 0 {
			c.v[sCon] = kd[kContributing].label(t.con, 0, pair{})
			c.has |= needCon
		}
		if t.rc >= 0 {
			c.v[sRC] = [2]string{kd[kRootCause].en[t.rc], kd[kRootCause].ko[t.rc]}
		} else {
			c.v[sRC] = [2]string{"an unknown cause", "알 수 없는 원인"}
		}
		if t.sev >= 0 {
			c.v[sSev] = [2]string{kd[kSeverity].en[t.sev], kd[kSeverity].ko[t.sev]}
		} else {
			c.v[sSev] = [2]string{"unknown", "미상"}
		}
		w := pickDistinct(r, len(Vocabulary), 3)
		for n, s := range [3]slot{sW1, sW2, sW3} {
			c.v[s] = [2]string{Vocabulary[w[n]].en, Vocabulary[w[n]].ko}
		}
		p := pickDistinct(r, len(Products), 2)
		c.v[sP1] = [2]string{Products[p[0]], Products[p[0]]}
		c.v[sP2] = [2]string{Products[p[1]], Products[p[1]]}
		n := strconv.Itoa(2 + r.IntN(63))
		c.v[sN] = [2]string{n, n}
		pct := strconv.Itoa(3 + r.IntN(95))
		c.v[sPct] = [2]string{pct, pct}
		ms := strconv.Itoa([...]int{200, 300, 500, 800, 1000, 1500, 2000, 5000, 10000, 30000}[r.IntN(10)])
		c.v[sMs] = [2]string{ms, ms}
		dur := durText(resolved)
		c.v[sDur] = [2]string{dur.en, dur.ko}
		det := pair{"a few minutes", "몇 분"}
		if detected > 0 {
			det = durText(detected)
		}
		c.v[sDet] = [2]string{det.en, det.ko}
		reg := regions[r.IntN(len(regions))]
		c.v[sRegion] = [2]string{reg.en, reg.ko}
		if d := g.day[i]; d >= 0 {
			tm := firstDate.AddDate(0, 0, d)
			day := strconv.Itoa(tm.Day()) + " " + monthsEn[tm.Month()-1] + " " + strconv.Itoa(tm.Year())
			c.v[sWhen] = [2]string{"On " + day, strconv.Itoa(tm.Year()) + "년 " + strconv.Itoa(int(tm.Month())) + "월 " + strconv.Itoa(tm.Day()) + "일"}
			c.whenL = "on " + day
		} else {
			c.v[sWhen] = [2]string{"On an unrecorded day", "어느 날"}
			c.whenL = "on an unrecorded day"
		}

		// Texts.
		var ln lang
		switch u := r.Float64(); {
		case u < EnglishOnly:
			ln = langEn
		case u < EnglishOnly+KoreanOnly:
			ln = langKo
		}
		text := func(ts ...*tpair) incidentlib.Text {
			var out incidentlib.Text
			for l := range 2 {
				if (l == en && ln == langKo) || (l == ko && ln == langEn) {
					continue
				}
				buf = buf[:0]
				for n, tp := range ts {
					if n > 0 {
						buf = append(buf, ' ')
					}
					if l == en {
						buf = c.expand(buf, &tp.en, en)
					} else {
						buf = c.expand(buf, &tp.ko, ko)
					}
				}
				if l == en {
					out.En = string(buf)
				} else {
					out.Ko = string(buf)
				}
			}
			return out
		}
		inc.Title = text(c.pick(r, titleT))
		inc.Title.En = clip(inc.Title.En, MaxTitleRunes)
		inc.Title.Ko = clip(inc.Title.Ko, MaxTitleRunes)
		// The summary is an opener, one to three middle sentences and a
		// closer, with more middle sentences while the English is short.
		sum := []*tpair{c.pick(r, openerT)}
		for range 1 + r.IntN(3) {
			sum = c.addMiddle(r, sum)
		}
		sum = append(sum, c.pick(r, closerT))
		inc.Summary = text(sum...)
		for inc.Summary.En != "" && utf8.RuneCountInString(inc.Summary.En) < MinSummaryRunes && len(sum) < 7 {
			sum = append(c.addMiddle(r, sum[:len(sum)-1]), sum[len(sum)-1])
			inc.Summary = text(sum...)
		}
		if r.Float64() >= 0.08 {
			inc.Lessons = text(c.pick(r, lessonT))
		}
		if r.Float64() >= 0.10 {
			inc.Trigger = text(c.pick(r, triggerT))
		}
		if r.Float64() >= 0.15 {
			inc.Detection = text(c.pick(r, detectionT))
		}
		if r.Float64() >= 0.10 {
			inc.SymptomsText = text(c.pick(r, symptomsT))
		}
		inc.Remediation = c.items(r, remediationT, itemCount.pick(r), text)
		inc.ActionItems = c.items(r, actionT, itemCount.pick(r), text)

		// Impact, in English unless the record is Korean only.
		il := en
		if ln == langKo {
			il = ko
		}
		imp := func(ts []tpair) string {
			tp := c.pick(r, ts)
			if il == en {
				buf = c.expand(buf[:0], &tp.en, en)
			} else {
				buf = c.expand(buf[:0], &tp.ko, ko)
			}
			return string(buf)
		}
		if r.Float64() >= 0.08 {
			inc.Impact.Scope = imp(scopeT)
		}
		if r.Float64() >= 0.15 {
			inc.Impact.Users = imp(usersT)
		}
		if r.Float64() >= 0.10 {
			inc.Impact.Region = reg.en
			if il == ko {
				inc.Impact.Region = reg.ko
			}
		}

		// Times.
		lo := updatedMin
		if d := g.day[i]; d >= 0 {
			lo = max(lo, firstDate.Unix()+int64(d+1)*86400)
		}
		updated := lo + r.Int64N(updatedMax-lo+1)
		inc.UpdatedAt = time.Unix(updated, 0).UTC().Format(time.RFC3339)
		inc.Review.WrittenBy = WrittenBy
		if r.Float64() < ReviewedShare {
			rlo := max(lo, updated-180*86400)
			inc.Review.ReviewedAt = time.Unix(rlo+r.Int64N(updated-rlo+1), 0).UTC().Format(time.RFC3339)
			inc.Review.ReviewedBy = reviewers[r.IntN(len(reviewers))]
		}

		inc.Sources = g.sources(r, i, o, lo)
	}
}

// addMiddle appends a middle sentence the summary does not have yet.
func (c *textCtx) addMiddle(r *rand.Rand, sum []*tpair) []*tpair {
	for {
		tp := c.pick(r, middleT)
		if !slices.Contains(sum, tp) {
			return append(sum, tp)
		}
	}
}

// pick draws a template whose optional slots the record has.
func (c *textCtx) pick(r *rand.Rand, ts []tpair) *tpair {
	for {
		tp := &ts[r.IntN(len(ts))]
		if tp.needs&^c.has == 0 {
			return tp
		}
	}
}

func (c *textCtx) items(r *rand.Rand, ts []tpair, k int, text func(...*tpair) incidentlib.Text) []incidentlib.Item {
	if k == 0 {
		return nil
	}
	var used []*tpair
	out := make([]incidentlib.Item, 0, k)
	for tries := 0; len(out) < k && tries < 20; tries++ {
		tp := c.pick(r, ts)
		if slices.Contains(used, tp) {
			continue
		}
		used = append(used, tp)
		out = append(out, incidentlib.Item{Text: text(tp)})
	}
	return out
}

var (
	scopeT = pairs(
		"{pct}% of requests to {comp} failed",
		"{comp} 요청의 {pct}%가 실패했다",
		"{org} was fully down for {dur}",
		"{org:이} {dur} 동안 완전히 멈췄다",
		"Degraded {dom} features, with {sym} for some customers",
		"{dom} 기능이 저하되어 일부 고객이 {sym:을} 겪었다",
	)
	usersT = pairs(
		"{org} customers in {region}",
		"{region:의} {org} 고객",
		"Developers using the {org} API",
		"{org} API 를 쓰는 개발자",
		"About {n},000 users",
		"약 {n},000명의 사용자",
	)
)

func (g *generator) sources(r *rand.Rand, i int, o Org, lo int64) []incidentlib.Source {
	k := 1
	if r.Float64() < 0.35 {
		k = 2
	}
	out := make([]incidentlib.Source, 0, k)
	year := "2024"
	if d := g.day[i]; d >= 0 {
		year = dateStrings[d][:4]
	}
	num := strconv.Itoa(1000 + r.IntN(90000))
	var s incidentlib.Source
	switch r.IntN(3) {
	case 0:
		s = incidentlib.Source{URL: "https://status." + o.Slug + ".example/incidents/" + num, Kind: "status"}
	case 1:
		topic := "outage"
		if rc := g.tm[i].rc; rc >= 0 {
			topic = g.kinds[kRootCause].terms[rc].Slug
		}
		s = incidentlib.Source{URL: "https://blog." + o.Slug + ".example/" + year + "/" + topic + "-postmortem-" + num, Kind: "blog"}
	default:
		s = incidentlib.Source{URL: "https://engineering." + o.Slug + ".example/postmortems/" + num, Kind: "postmortem"}
	}
	out = append(out, s)
	if k == 2 {
		n2 := strconv.Itoa(100000 + r.IntN(900000))
		if r.IntN(2) == 0 {
			out = append(out, incidentlib.Source{URL: "https://news.example.com/" + year + "/" + o.Slug + "-outage-" + n2, Kind: "news"})
		} else {
			out = append(out, incidentlib.Source{URL: "https://forum." + o.Slug + ".example/t/" + n2, Kind: "forum"})
		}
	}
	for n := range out {
		if r.IntN(2) == 0 {
			at := time.Unix(lo+r.Int64N(updatedMax-lo+1), 0).UTC().Format("20060102150405")
			out[n].Archived = "https://web.archive.org/web/" + at + "/" + out[n].URL
		}
	}
	return out
}

// related gives each incident 0-3 related incidents, mostly of the same
// organization or sharing a term, never itself and without duplicates.
func (g *generator) related() {
	r := g.rng(streamRelated)
	byOrg := make([][]int32, len(Orgs))
	byTerm := make([][]int32, g.numTerms)
	for i := range g.n {
		byOrg[g.org[i]] = append(byOrg[g.org[i]], int32(i))
		for _, key := range g.termKeys(i, nil) {
			byTerm[key] = append(byTerm[key], int32(i))
		}
	}
	var keys []int
	for i := range g.n {
		k := relCount.pick(r)
		if k == 0 || g.n == 1 {
			continue
		}
		keys = g.termKeys(i, keys[:0])
		var rel []int
		for tries := 0; len(rel) < k && tries < 4*k; tries++ {
			var j int
			switch u := r.Float64(); {
			case u < 0.45:
				l := byOrg[g.org[i]]
				j = int(l[r.IntN(len(l))])
			case u < 0.85 && len(keys) > 0:
				l := byTerm[keys[r.IntN(len(keys))]]
				j = int(l[r.IntN(len(l))])
			default:
				j = r.IntN(g.n)
			}
			if j != i && !slices.Contains(rel, j) {
				rel = append(rel, j)
			}
		}
		if len(rel) == 0 {
			continue
		}
		slices.Sort(rel)
		ids := make([]string, len(rel))
		for n, j := range rel {
			ids[n] = g.id(j)
		}
		g.out[i].Related = ids
	}
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

// resolvedMinutes draws how long an incident took to resolve.
func resolvedMinutes(r *rand.Rand) int {
	switch u := r.Float64(); {
	case u < 0.35:
		return 5 * (1 + r.IntN(11)) // 5m..55m
	case u < 0.75:
		if r.IntN(2) == 0 {
			return 60 * (1 + r.IntN(12)) // 1h..12h
		}
		return 60*(1+r.IntN(11)) + 15*(1+r.IntN(3)) // 1h15m..11h45m
	case u < 0.95:
		return 60 * (12 + r.IntN(61)) // 12h..72h
	default:
		return 24 * 60 * (3 + r.IntN(5)) // 3d..7d
	}
}

// detectedMinutes draws how long an incident took to detect.
func detectedMinutes(r *rand.Rand) int {
	switch u := r.Float64(); {
	case u < 0.5:
		return 1 + r.IntN(10)
	case u < 0.85:
		return 5 * (2 + r.IntN(11))
	default:
		return 60 * (1 + r.IntN(6))
	}
}

// clip shortens s to at most n characters at a word boundary.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)[:n-1]
	cut := len(rs)
	for j := len(rs) - 1; j > n/2; j-- {
		if rs[j] == ' ' {
			cut = j
			break
		}
	}
	return strings.TrimRight(string(rs[:cut]), " ,:;") + "…"
}
