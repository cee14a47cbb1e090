package gen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// testTaxonomy covers all six kinds with a handful of terms each.
func testTaxonomy(t testing.TB) *incidentlib.Taxonomy {
	t.Helper()
	term := func(kind incidentlib.TermKind, slug, en, ko string) *incidentlib.Term {
		return &incidentlib.Term{Kind: kind, Slug: slug, Label: incidentlib.Text{En: en, Ko: ko}}
	}
	terms := []*incidentlib.Term{
		term(incidentlib.KindDomain, "database", "Database", "데이터베이스"),
		term(incidentlib.KindDomain, "network", "Network", "네트워크"),
		term(incidentlib.KindDomain, "storage", "Storage", "스토리지"),
		term(incidentlib.KindDomain, "cdn", "CDN", "CDN"),
		term(incidentlib.KindDomain, "auth", "Authentication", "인증"),
		term(incidentlib.KindSymptom, "high-latency", "High latency", "높은 지연"),
		term(incidentlib.KindSymptom, "service-unavailable", "Service unavailable", "서비스 중단"),
		term(incidentlib.KindSymptom, "node-high-cpu", "High CPU on nodes", "노드 CPU 과부하"),
		term(incidentlib.KindSymptom, "monitoring-down", "Monitoring down", "모니터링 중단"),
		term(incidentlib.KindSymptom, "data-loss", "Data loss", "데이터 유실"),
		term(incidentlib.KindSymptom, "elevated-errors", "Elevated error rates", "오류율 증가"),
		term(incidentlib.KindSymptom, "dns-failure", "DNS failure", "DNS 실패"),
		term(incidentlib.KindSymptom, "stale-reads", "Stale reads", "오래된 읽기"),
		term(incidentlib.KindComponent, "coordination-store", "Coordination store", "코디네이션 저장소"),
		term(incidentlib.KindComponent, "service-discovery", "Service discovery", "서비스 디스커버리"),
		term(incidentlib.KindComponent, "cache", "Cache", "캐시"),
		term(incidentlib.KindComponent, "load-balancer", "Load balancer", "로드 밸런서"),
		term(incidentlib.KindComponent, "primary-database", "Primary database", "주 데이터베이스"),
		term(incidentlib.KindComponent, "message-queue", "Message queue", "메시지 큐"),
		term(incidentlib.KindComponent, "api-gateway", "API gateway", "API 게이트웨이"),
		term(incidentlib.KindRootCause, "software-bug", "Software bug", "소프트웨어 버그"),
		term(incidentlib.KindRootCause, "config-change", "Configuration change", "설정 변경"),
		term(incidentlib.KindRootCause, "capacity", "Capacity exhaustion", "용량 부족"),
		term(incidentlib.KindRootCause, "hardware-failure", "Hardware failure", "하드웨어 고장"),
		term(incidentlib.KindRootCause, "expired-certificate", "Expired certificate", "인증서 만료"),
		term(incidentlib.KindContributing, "single-point-of-failure", "Single point of failure", "단일 장애 지점"),
		term(incidentlib.KindContributing, "monitoring-blind-spot", "Monitoring blind spot", "모니터링 사각지대"),
		term(incidentlib.KindContributing, "overlapping-failures", "Overlapping failures", "겹친 장애"),
		term(incidentlib.KindContributing, "manual-action-worsened", "Manual action made it worse", "수동 조치가 악화시킴"),
		term(incidentlib.KindSeverity, "critical", "Critical", "심각"),
		term(incidentlib.KindSeverity, "major", "Major", "주요"),
		term(incidentlib.KindSeverity, "minor", "Minor", "경미"),
		term(incidentlib.KindSeverity, "unknown", "Unknown", "미상"),
	}
	tax, err := incidentlib.NewTaxonomy(terms)
	if err != nil {
		t.Fatal(err)
	}
	return tax
}

func generate(t testing.TB, opts Options) []*incidentlib.Incident {
	t.Helper()
	if opts.Taxonomy == nil {
		opts.Taxonomy = testTaxonomy(t)
	}
	incs, err := Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(incs) != opts.Count {
		t.Fatalf("got %d incidents, want %d", len(incs), opts.Count)
	}
	return incs
}

func jsonl(t testing.TB, incs []*incidentlib.Incident) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, incs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDeterministic(t *testing.T) {
	tax := testTaxonomy(t)
	a := jsonl(t, generate(t, Options{Count: 1500, Seed: 42, Taxonomy: tax}))
	b := jsonl(t, generate(t, Options{Count: 1500, Seed: 42, Taxonomy: tax}))
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same options gave different JSONL")
	}
	c := jsonl(t, generate(t, Options{Count: 1500, Seed: 43, Taxonomy: tax}))
	if bytes.Equal(a, c) {
		t.Fatal("a different seed gave the same JSONL")
	}
	// A taxonomy built from the same terms in another order gives the same
	// corpus: the generator orders terms by slug, not by input order.
	terms := slices.Clone(tax.Terms)
	slices.Reverse(terms)
	tax2, err := incidentlib.NewTaxonomy(terms)
	if err != nil {
		t.Fatal(err)
	}
	d := jsonl(t, generate(t, Options{Count: 1500, Seed: 42, Taxonomy: tax2}))
	if !bytes.Equal(a, d) {
		t.Fatal("the order of the taxonomy's terms changed the corpus")
	}
}

func TestWriteJSONL(t *testing.T) {
	incs := generate(t, Options{Count: 300, Seed: 1})
	data := jsonl(t, incs)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		want, _ := json.Marshal(incs[n])
		if !bytes.Equal(sc.Bytes(), want) {
			t.Fatalf("line %d is not json.Marshal of the record", n+1)
		}
		var back incidentlib.Incident
		if err := json.Unmarshal(sc.Bytes(), &back); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		again, _ := json.Marshal(&back)
		if !bytes.Equal(again, want) {
			t.Fatalf("line %d does not survive a round trip:\n%s\n%s", n+1, want, again)
		}
		n++
	}
	if n != len(incs) {
		t.Fatalf("%d lines for %d incidents", n, len(incs))
	}
	if err := WriteJSONL(failWriter{}, incs); err == nil {
		t.Fatal("WriteJSONL hid a write error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// checkValid checks every record against Validate, ValidateTerms and the
// shape the package promises.
func checkValid(t *testing.T, incs []*incidentlib.Incident, tax *incidentlib.Taxonomy, first uint32) {
	t.Helper()
	ids := map[string]bool{}
	for k, inc := range incs {
		if want := incidentlib.FormatID(first + uint32(k)); inc.ID != want {
			t.Fatalf("record %d has id %s, want %s", k, inc.ID, want)
		}
		ids[inc.ID] = true
	}
	minDate, maxDate := "2006-01-01", "2025-12-31"
	uMin := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	uMax := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, inc := range incs {
		if err := inc.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", inc.ID, err)
		}
		if err := inc.ValidateTerms(tax); err != nil {
			t.Fatalf("%s: ValidateTerms: %v", inc.ID, err)
		}
		in := func(what string, n, lo, hi int) {
			if n < lo || n > hi {
				t.Fatalf("%s: %d %s, want %d..%d", inc.ID, n, what, lo, hi)
			}
		}
		cap := func(k incidentlib.TermKind, n int) int { return min(n, len(tax.Kind(k))) }
		in("domains", len(inc.Domain), cap(incidentlib.KindDomain, 1), cap(incidentlib.KindDomain, 2))
		in("symptoms", len(inc.Symptoms), cap(incidentlib.KindSymptom, 1), cap(incidentlib.KindSymptom, 4))
		in("components", len(inc.Components), cap(incidentlib.KindComponent, 1), cap(incidentlib.KindComponent, 4))
		in("contributing", len(inc.Contributing), 0, cap(incidentlib.KindContributing, 3))
		in("remediation steps", len(inc.Remediation), 0, 4)
		in("action items", len(inc.ActionItems), 0, 4)
		in("sources", len(inc.Sources), 1, 2)
		in("related", len(inc.Related), 0, 3)
		if (inc.RootCause != "") != (len(tax.Kind(incidentlib.KindRootCause)) > 0) ||
			(inc.Severity != "") != (len(tax.Kind(incidentlib.KindSeverity)) > 0) {
			t.Fatalf("%s: root_cause %q, severity %q", inc.ID, inc.RootCause, inc.Severity)
		}
		if inc.Date != "" {
			if inc.Date < minDate || inc.Date > maxDate || inc.DateKind != "incident" {
				t.Fatalf("%s: date %q (%s)", inc.ID, inc.Date, inc.DateKind)
			}
		} else if inc.DateKind != "" {
			t.Fatalf("%s: undated with date_kind %q", inc.ID, inc.DateKind)
		}
		u, err := time.Parse(time.RFC3339, inc.UpdatedAt)
		if err != nil || u.Before(uMin) || !u.Before(uMax) || !strings.HasSuffix(inc.UpdatedAt, "Z") {
			t.Fatalf("%s: updated_at %q", inc.ID, inc.UpdatedAt)
		}
		if inc.Date != "" && inc.UpdatedAt[:10] <= inc.Date {
			t.Fatalf("%s: updated_at %s is not after date %s", inc.ID, inc.UpdatedAt, inc.Date)
		}
		if inc.Review.WrittenBy != "gen" || (inc.Review.ReviewedAt == "") != (inc.Review.ReviewedBy == "") {
			t.Fatalf("%s: review %+v", inc.ID, inc.Review)
		}
		if inc.Review.ReviewedAt != "" {
			if _, err := time.Parse(time.RFC3339, inc.Review.ReviewedAt); err != nil {
				t.Fatalf("%s: reviewed_at: %v", inc.ID, err)
			}
		}
		if inc.URL != "https://incidentlib.example/cases/"+inc.ID {
			t.Fatalf("%s: url %q", inc.ID, inc.URL)
		}
		for _, s := range inc.Sources {
			if !strings.HasPrefix(s.URL, "https://") || (s.Archived != "" && !strings.HasPrefix(s.Archived, "https://web.archive.org/web/20")) {
				t.Fatalf("%s: source %+v", inc.ID, s)
			}
		}
		if len(inc.Sources) == 2 && inc.Sources[0].URL == inc.Sources[1].URL {
			t.Fatalf("%s: the same source twice", inc.ID)
		}
		if len(inc.Docs) != 0 {
			t.Fatalf("%s: docs %v", inc.ID, inc.Docs)
		}
		if n := utf8.RuneCountInString(inc.Title.En); n >= 150 {
			t.Fatalf("%s: English title of %d characters", inc.ID, n)
		}
		if n := utf8.RuneCountInString(inc.Title.Ko); n >= 150 {
			t.Fatalf("%s: Korean title of %d characters", inc.ID, n)
		}
		if inc.Summary.IsZero() || inc.Title.IsZero() {
			t.Fatalf("%s: no summary or title", inc.ID)
		}
		for _, d := range []string{inc.Timeline.DetectedAfter, inc.Timeline.ResolvedAfter} {
			if d != "" {
				if _, err := incidentlib.ParseDuration(d); err != nil {
					t.Fatalf("%s: %v", inc.ID, err)
				}
			}
		}
		for _, r := range append(slices.Clone(inc.Related), inc.RecurrenceOf) {
			if r != "" && !ids[r] {
				t.Fatalf("%s: link to %s, which was not generated", inc.ID, r)
			}
		}
		for _, items := range [][]incidentlib.Item{inc.Remediation, inc.ActionItems} {
			for n, it := range items {
				if it.Text.IsZero() {
					t.Fatalf("%s: empty item", inc.ID)
				}
				for _, other := range items[:n] {
					if other.Text.En == it.Text.En && other.Text.Ko == it.Text.Ko {
						t.Fatalf("%s: the same item twice: %v", inc.ID, it.Text)
					}
				}
			}
		}
	}
}

func TestValid(t *testing.T) {
	tax := testTaxonomy(t)
	checkValid(t, generate(t, Options{Count: 2000, Seed: 7, Taxonomy: tax}), tax, 1)
	checkValid(t, generate(t, Options{Count: 500, Seed: 8, FirstID: 12345, Taxonomy: tax}), tax, 12345)
	checkValid(t, generate(t, Options{Count: 1, Seed: 9, Taxonomy: tax}), tax, 1)
	checkValid(t, generate(t, Options{Count: 3, Seed: 9, FirstID: 1<<32 - 3, Taxonomy: tax}), tax, 1<<32-3)
	if id := generate(t, Options{Count: 1, Taxonomy: tax})[0].ID; id != "IL-0001" {
		t.Fatalf("first id %s, want IL-0001", id)
	}
}

// TestSmallTaxonomy generates from a taxonomy with one term of each kind but
// contributing, and none of that kind.
func TestSmallTaxonomy(t *testing.T) {
	var terms []*incidentlib.Term
	for _, k := range incidentlib.TermKinds {
		if k != incidentlib.KindContributing {
			terms = append(terms, &incidentlib.Term{Kind: k, Slug: "only-" + strings.ReplaceAll(string(k), "_", "-"), Label: incidentlib.Text{En: "Only " + string(k)}})
		}
	}
	tax, err := incidentlib.NewTaxonomy(terms)
	if err != nil {
		t.Fatal(err)
	}
	incs := generate(t, Options{Count: 400, Seed: 3, Taxonomy: tax})
	checkValid(t, incs, tax, 1)
	for _, inc := range incs {
		if len(inc.Symptoms) != 1 || len(inc.Contributing) != 0 {
			t.Fatalf("%s: symptoms %v, contributing %v", inc.ID, inc.Symptoms, inc.Contributing)
		}
	}
}

// TestTaxonomyFile generates against the project's taxonomy when it exists.
func TestTaxonomyFile(t *testing.T) {
	data, err := os.ReadFile("../seeds/taxonomy.json")
	if err != nil {
		t.Skipf("no taxonomy file: %v", err)
	}
	tax, err := incidentlib.ParseTaxonomy(data)
	if err != nil {
		t.Skipf("taxonomy file does not parse (yet): %v", err)
	}
	checkValid(t, generate(t, Options{Count: 2000, Seed: 11, Taxonomy: tax}), tax, 1)
}

func TestOptionErrors(t *testing.T) {
	tax := testTaxonomy(t)
	for _, opts := range []Options{
		{Count: 0, Taxonomy: tax},
		{Count: -1, Taxonomy: tax},
		{Count: 10},
		{Count: 10, FirstID: 1<<32 - 5, Taxonomy: tax},
	} {
		if _, err := Generate(opts); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Errorf("Generate(%+v): %v, want EINVALID", opts, err)
		}
	}
}

func TestOrgs(t *testing.T) {
	if len(Orgs) < 140 {
		t.Fatalf("only %d organizations", len(Orgs))
	}
	names, slugs := map[string]bool{}, map[string]bool{}
	for _, o := range Orgs {
		if names[o.Name] || slugs[o.Slug] || !incidentlib.ValidSlug(o.Slug) || o.Slug != Slugify(o.Name) {
			t.Errorf("organization %+v is a duplicate or has a bad slug", o)
		}
		for _, r := range o.Name {
			if r > unicode.MaxASCII {
				t.Errorf("organization %q is not Latin", o.Name)
			}
		}
		names[o.Name], slugs[o.Slug] = true, true
	}
	for in, want := range map[string]string{"Fly.io": "fly-io", "Let's Encrypt": "lets-encrypt", "Amazon Web Services": "amazon-web-services", "npm": "npm"} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSkew(t *testing.T) {
	incs := generate(t, Options{Count: 6000, Seed: 5})
	count := map[string]int{}
	slugOf := map[string]string{}
	for _, inc := range incs {
		count[inc.Org]++
		if s, ok := slugOf[inc.Org]; ok && s != inc.OrgSlug {
			t.Fatalf("org %q has slugs %q and %q", inc.Org, s, inc.OrgSlug)
		}
		slugOf[inc.Org] = inc.OrgSlug
	}
	counts := make([]int, len(Orgs))
	for n, o := range Orgs {
		counts[n] = count[o.Name]
	}
	slices.Sort(counts)
	top, median := counts[len(counts)-1], counts[len(counts)/2]
	t.Logf("organizations: top %d, median %d, least %d of %d", top, median, counts[0], len(incs))
	if top < 10*median {
		t.Errorf("the most common organization has %d incidents, the median %d: not skewed", top, median)
	}
	top5 := 0
	for _, c := range counts[len(counts)-5:] {
		top5 += c
	}
	if top5 < len(incs)/3 {
		t.Errorf("the top five organizations hold %d of %d incidents", top5, len(incs))
	}

	// Terms are skewed too.
	for _, field := range []string{"symptoms", "components", "root_cause"} {
		tc := map[string]int{}
		for _, inc := range incs {
			switch field {
			case "symptoms":
				for _, s := range inc.Symptoms {
					tc[s]++
				}
			case "components":
				for _, s := range inc.Components {
					tc[s]++
				}
			default:
				tc[inc.RootCause]++
			}
		}
		var cs []int
		for _, c := range tc {
			cs = append(cs, c)
		}
		slices.Sort(cs)
		t.Logf("%s: %v", field, cs)
		if cs[len(cs)-1] < 3*cs[0] {
			t.Errorf("%s: most common term %d, least common %d: not skewed", field, cs[len(cs)-1], cs[0])
		}
	}
}

func TestShares(t *testing.T) {
	incs := generate(t, Options{Count: 6000, Seed: 6})
	var undated, reviewed, both, enOnly, koOnly int
	for _, inc := range incs {
		if inc.Date == "" {
			undated++
		}
		if inc.Review.ReviewedAt != "" {
			reviewed++
		}
		switch {
		case inc.Title.En != "" && inc.Title.Ko != "":
			both++
		case inc.Title.En != "":
			enOnly++
		default:
			koOnly++
		}
		// Every text of a record is in the same languages as its title.
		for _, x := range []incidentlib.Text{inc.Summary, inc.Lessons, inc.Trigger, inc.Detection, inc.SymptomsText} {
			if (x.En != "" && inc.Title.En == "") || (x.Ko != "" && inc.Title.Ko == "") {
				t.Fatalf("%s: text in a language the title lacks: %+v", inc.ID, x)
			}
		}
		if inc.Title.Ko != "" && !hasHangul(inc.Title.Ko) {
			t.Fatalf("%s: Korean title without Hangul: %q", inc.ID, inc.Title.Ko)
		}
		if inc.Summary.Ko != "" && !hasHangul(inc.Summary.Ko) {
			t.Fatalf("%s: Korean summary without Hangul", inc.ID)
		}
		if inc.Summary.En != "" && hasHangul(inc.Summary.En) {
			t.Fatalf("%s: English summary with Hangul: %q", inc.ID, inc.Summary.En)
		}
		if inc.Summary.En != "" && !strings.Contains(inc.Summary.En+inc.Title.En, inc.Org) {
			// The opener names the org in most templates, the title in most others.
			if !strings.Contains(inc.Summary.En, "users of") {
				t.Logf("%s: English texts do not name %s", inc.ID, inc.Org)
			}
		}
	}
	n := float64(len(incs))
	share := func(what string, got int, lo, hi float64) {
		f := float64(got) / n
		t.Logf("%s: %.3f", what, f)
		if f < lo || f > hi {
			t.Errorf("%s share %.3f, want %.2f..%.2f", what, f, lo, hi)
		}
	}
	share("undated", undated, 0.02, 0.04)
	share("reviewed", reviewed, 0.27, 0.33)
	share("bilingual", both, 0.82, 0.88)
	share("English only", enOnly, 0.085, 0.115)
	share("Korean only", koOnly, 0.04, 0.06)
}

func hasHangul(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Hangul, r) {
			return true
		}
	}
	return false
}

func TestRecurrence(t *testing.T) {
	incs := generate(t, Options{Count: 4000, Seed: 12})
	byID := map[string]*incidentlib.Incident{}
	for _, inc := range incs {
		byID[inc.ID] = inc
	}
	recs, longest := 0, 0
	for _, inc := range incs {
		if inc.RecurrenceOf == "" {
			continue
		}
		recs++
		p := byID[inc.RecurrenceOf]
		switch {
		case p == nil:
			t.Fatalf("%s: recurrence_of %s does not exist", inc.ID, inc.RecurrenceOf)
		case p == inc:
			t.Fatalf("%s: recurrence of itself", inc.ID)
		case p.OrgSlug != inc.OrgSlug:
			t.Fatalf("%s (%s) is a recurrence of %s (%s)", inc.ID, inc.OrgSlug, p.ID, p.OrgSlug)
		case inc.Date == "" || p.Date == "" || p.Date >= inc.Date:
			t.Fatalf("%s (%s) is a recurrence of %s (%s), which is not earlier", inc.ID, inc.Date, p.ID, p.Date)
		case p.RootCause != inc.RootCause:
			t.Fatalf("%s: root cause %s differs from its original's %s", inc.ID, inc.RootCause, p.RootCause)
		}
		// Walk the chain to its start; it must end.
		seen := map[string]bool{inc.ID: true}
		n := 1
		for x := p; x != nil; x = byID[x.RecurrenceOf] {
			if seen[x.ID] {
				t.Fatalf("cycle through %s", x.ID)
			}
			seen[x.ID] = true
			n++
		}
		longest = max(longest, n)
	}
	f := float64(recs) / float64(len(incs))
	t.Logf("recurrences: %.3f, longest chain %d", f, longest)
	if f < 0.06 || f > 0.10 {
		t.Errorf("recurrence share %.3f, want about 0.08", f)
	}
	if longest < 3 {
		t.Errorf("longest recurrence chain has %d incidents, want chains of 3 or more", longest)
	}
}

func TestRelated(t *testing.T) {
	incs := generate(t, Options{Count: 2000, Seed: 13})
	byID := map[string]*incidentlib.Incident{}
	for _, inc := range incs {
		byID[inc.ID] = inc
	}
	links, close, with := 0, 0, 0
	for _, inc := range incs {
		if len(inc.Related) > 0 {
			with++
		}
		for n, r := range inc.Related {
			if r == inc.ID {
				t.Fatalf("%s is related to itself", inc.ID)
			}
			if slices.Contains(inc.Related[:n], r) {
				t.Fatalf("%s: %s is related twice", inc.ID, r)
			}
			o := byID[r]
			if o == nil {
				t.Fatalf("%s: related %s does not exist", inc.ID, r)
			}
			links++
			if o.OrgSlug == inc.OrgSlug || o.RootCause == inc.RootCause || shares(o.Components, inc.Components) || shares(o.Symptoms, inc.Symptoms) {
				close++
			}
		}
	}
	t.Logf("with related: %d of %d, links %d, of the same org or sharing terms %d", with, len(incs), links, close)
	if with < len(incs)/2 || float64(close) < 0.8*float64(links) {
		t.Errorf("related links: %d incidents with links, %d of %d links close", with, close, links)
	}
}

func shares(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// TestVocabulary checks that search has technical words to find in both
// languages, including Korean text mixed with English.
func TestVocabulary(t *testing.T) {
	data := string(jsonl(t, generate(t, Options{Count: 1500, Seed: 14})))
	for _, w := range []string{"connection pool", "커넥션 풀", "leader election", "리더 선출", "keepalive", "freelist",
		"cache", "캐시", "timeout", "타임아웃", "Consul 클러스터", "retry storm", "재시도 폭주"} {
		if !strings.Contains(data, w) {
			t.Errorf("the corpus never mentions %q", w)
		}
	}
}

func TestTextSizes(t *testing.T) {
	incs := generate(t, Options{Count: 2000, Seed: 15})
	var sumEn, nEn, minEn, maxEn int
	minEn = 1 << 30
	for _, inc := range incs {
		if inc.Summary.En != "" {
			n := utf8.RuneCountInString(inc.Summary.En)
			sumEn += n
			nEn++
			minEn, maxEn = min(minEn, n), max(maxEn, n)
		}
	}
	t.Logf("English summaries: %d..%d characters, mean %d", minEn, maxEn, sumEn/nEn)
	if minEn < 250 || maxEn > 900 {
		t.Errorf("English summaries of %d..%d characters, want about 300..800", minEn, maxEn)
	}
	size := len(jsonl(t, incs)) / len(incs)
	t.Logf("%d bytes of JSONL per record", size)
	if size > 4000 {
		t.Errorf("%d bytes per record: 100,000 records would take %d MB", size, size/10)
	}
}

func TestKoreanParticles(t *testing.T) {
	c := textCtx{}
	cases := []struct{ word, tmpl, want string }{
		{"캐시", "{comp:이} 멈췄다", "캐시가 멈췄다"},
		{"높은 지연", "{comp:이} 생겼다", "높은 지연이 생겼다"},
		{"Consul", "{comp:은} 느렸다", "Consul 은 느렸다"},
		{"Redis", "{comp:을} 껐다", "Redis 를 껐다"},
		{"PostgreSQL", "{comp:으로} 옮겼다", "PostgreSQL 로 옮겼다"},
		{"서울", "{comp:으로} 옮겼다", "서울로 옮겼다"},
		{"부산항", "{comp:으로} 옮겼다", "부산항으로 옮겼다"},
		{"DNS", "{comp:과} 캐시", "DNS 와 캐시"},
		{"설정 변경", "원인은 {comp:이었다}.", "원인은 설정 변경이었다."},
		{"소프트웨어 버그", "원인은 {comp:이었다}.", "원인은 소프트웨어 버그였다."},
		{"Kubernetes", "{comp:에서}", "Kubernetes 에서"},
		{"스토리지", "{comp:의}", "스토리지의"},
		{"SEV2 (중대)", "심각도는 {comp:이었다}.", "심각도는 SEV2 (중대) 였다."},
		{"알 수 없음", "심각도는 {comp:이었다}.", "심각도는 알 수 없음이었다."},
		{"Slack", "{comp:이}", "Slack 이"},
		{"etcd", "{comp:이}", "etcd 가"},
	}
	for _, tc := range cases {
		c.v[sComp] = [2]string{tc.word, tc.word}
		tm := compile(tc.tmpl)
		if got := string(c.expand(nil, &tm, ko)); got != tc.want {
			t.Errorf("%q with %q: %q, want %q", tc.tmpl, tc.word, got, tc.want)
		}
	}
}

func TestDurations(t *testing.T) {
	for min, want := range map[int]string{45: "45m", 180: "3h", 150: "2h30m", 4320: "3d", 1440: "24h"} {
		if got := durValue(min); got != want {
			t.Errorf("durValue(%d) = %q, want %q", min, got, want)
		}
	}
	if got := durText(150); got != (pair{"2 hours 30 minutes", "2시간 30분"}) {
		t.Errorf("durText(150) = %v", got)
	}
}

func TestClip(t *testing.T) {
	s := strings.Repeat("word ", 60)
	c := clip(s, MaxTitleRunes)
	if utf8.RuneCountInString(c) > MaxTitleRunes || !strings.HasSuffix(c, "…") {
		t.Fatalf("clip gave %q", c)
	}
	if clip("short", 10) != "short" {
		t.Fatal("clip changed a short string")
	}
}

var errSink error

func BenchmarkGenerate(b *testing.B) {
	tax := testTaxonomy(b)
	b.ReportAllocs()
	for b.Loop() {
		_, errSink = Generate(Options{Count: 10000, Seed: 1, Taxonomy: tax})
	}
	if errSink != nil {
		b.Fatal(errSink)
	}
}

func BenchmarkWriteJSONL(b *testing.B) {
	incs := generate(b, Options{Count: 10000, Seed: 1})
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteJSONL(io.Discard, incs); err != nil {
			b.Fatal(err)
		}
	}
}
