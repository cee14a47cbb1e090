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
	"sort"
	"time"

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
	streamProvenance
)

// Generate returns opts.Count incidents with ids FormatID(FirstID),
// FormatID(FirstID+1), ... Every record passes Validate and
// ValidateTerms(opts.Taxonomy). Kinds the taxonomy lacks are left empty.
func Generate(opts Options) ([]*incidentlib.Incident, error) {
	var out []*incidentlib.Incident
	err := Stream(opts, func(inc *incidentlib.Incident) error {
		out = append(out, inc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stream calls each with the incidents Generate returns, in the same
// order, one at a time: the corpus is never in memory as a whole (what is
// kept is the shape of each record: its organization, date, terms and
// recurrence, some tens of bytes). each may keep the record. Stream stops
// at the first error from each and returns it.
func Stream(opts Options, each func(*incidentlib.Incident) error) error {
	if opts.Count < 1 {
		return incidentlib.Errorf(incidentlib.EINVALID, "gen: count must be at least 1, not %d", opts.Count)
	}
	if opts.Taxonomy == nil {
		return incidentlib.Errorf(incidentlib.EINVALID, "gen: a taxonomy is required")
	}
	first := opts.FirstID
	if first == 0 {
		first = 1
	}
	if uint64(first)+uint64(opts.Count)-1 > incidentlib.MaxIDNumber {
		return incidentlib.Errorf(incidentlib.EINVALID, "gen: ids from %d for %d incidents exceed the largest id", first, opts.Count)
	}
	g := &generator{seed: uint64(opts.Seed), n: opts.Count, first: first, tax: opts.Taxonomy}
	g.setup()
	g.orgsAndDates()
	g.recurrences()
	g.terms()
	rel := g.related()
	r := g.rng(streamText)
	var c textCtx
	buf := make([]byte, 0, 1024)
	prov := g.provenance()
	for i := range g.n {
		inc := new(incidentlib.Incident)
		buf = g.record(i, inc, r, &c, buf)
		inc.Related = rel.next(i)
		prov(inc)
		if err := each(inc); err != nil {
			return err
		}
	}
	return nil
}

// provenance returns what gives each record, in order, a verification (or
// none, UNKNOWN) and, to some of those written in both languages, a
// translated language, from a stream of its own: the other fields are as
// they were without it.
func (g *generator) provenance() func(*incidentlib.Incident) {
	r := g.rng(streamProvenance)
	verifications := []incidentlib.Verification{"", incidentlib.VerificationPrimarySource,
		incidentlib.VerificationSecondaryReport, incidentlib.VerificationFirstPersonAccount}
	vPick := weights(40, 30, 20, 10)
	origins := []incidentlib.TextOrigin{"", incidentlib.TextMachineTranslation, incidentlib.TextHumanTranslation}
	oPick := weights(50, 35, 15)
	return func(inc *incidentlib.Incident) {
		inc.Verification = verifications[vPick.pick(r)]
		o := origins[oPick.pick(r)]
		if o == "" || inc.Title.En == "" || inc.Title.Ko == "" {
			return
		}
		if r.IntN(2) == 0 {
			inc.TextOrigin.Ko = o
		} else {
			inc.TextOrigin.En = o
		}
	}
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

func (g *generator) id(i int) string { return incidentlib.FormatID(g.first + uint32(i)) }
