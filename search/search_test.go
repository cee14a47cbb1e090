package search

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// searchStore opens a store in a temporary directory with the given
// incidents, closed at the end of the test.
func searchStore(tb testing.TB, incs []*incidentlib.Incident) *storage.DB {
	tb.Helper()
	db, err := storage.Open(filepath.Join(tb.TempDir(), "test.db"), storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: max(1000, len(incs))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if len(incs) > 0 {
		if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

// generated returns count generated incidents without links (search
// reads none, and a store takes them in any order then).
func generated(tb testing.TB, count int, seed int64) []*incidentlib.Incident {
	tb.Helper()
	incs, err := gen.Generate(gen.Options{Count: count, Seed: seed, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	for _, inc := range incs {
		inc.Related, inc.RecurrenceOf = nil, ""
	}
	return incs
}

// indexPath is where the tests keep the index of db.
func indexPath(db *storage.DB) string { return db.Path() + ".search" }

// mustOpen opens (building or catching up) the index of db, closed at the
// end of the test.
func mustOpen(tb testing.TB, db *storage.DB) *Index {
	tb.Helper()
	x, err := Open(context.Background(), db.Incidents(), indexPath(db), Options{BatchSize: 64})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}

func seedIncidents(tb testing.TB) []*incidentlib.Incident {
	tb.Helper()
	incs, err := seeds.Incidents()
	if err != nil {
		tb.Fatal(err)
	}
	return incs
}

// inc makes a small record: the texts are title, summary, lessons in
// English unless they contain Hangul.
func inc(id, org, title, summary, lessons string) *incidentlib.Incident {
	text := func(s string) incidentlib.Text {
		if hasHangul([]byte(s)) {
			return incidentlib.Text{Ko: s}
		}
		return incidentlib.Text{En: s}
	}
	return &incidentlib.Incident{ID: id, Org: org, OrgSlug: strings.ToLower(strings.ReplaceAll(org, " ", "-")),
		Title: text(title), Summary: text(summary), Lessons: text(lessons), Severity: "sev2",
		UpdatedAt: "2026-01-01T00:00:00Z"}
}

type searchOpt func(*incidentlib.SearchQuery)

func inLang(l incidentlib.Lang) searchOpt {
	return func(q *incidentlib.SearchQuery) { q.Lang = &l }
}

func withFilter(f incidentlib.IncidentFilter) searchOpt {
	return func(q *incidentlib.SearchQuery) { q.Filter = f }
}

func run(tb testing.TB, x *Index, query string, opts ...searchOpt) *incidentlib.SearchPage {
	tb.Helper()
	q := incidentlib.SearchQuery{Query: query}
	for _, o := range opts {
		o(&q)
	}
	first := incidentlib.MaxPageSize
	p, err := x.Search(context.Background(), q, incidentlib.PageArgs{First: &first})
	if err != nil {
		tb.Fatalf("search %q: %v", query, err)
	}
	return p
}

// ids runs a search and returns the ids found, best first.
func ids(tb testing.TB, x *Index, query string, opts ...searchOpt) []string {
	tb.Helper()
	out := []string{}
	for _, h := range run(tb, x, query, opts...).Hits {
		out = append(out, h.ID)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestAnalyzer(t *testing.T) {
	terms := func(s string) []string {
		var out []string
		for _, tok := range analyze(s) {
			out = append(out, fmt.Sprintf("%s@%d", tok.Term, tok.Position))
		}
		return out
	}
	cases := []struct {
		name, text string
		want       []string
	}{
		{"EnglishStemsAndStops", "The outages of Consul", []string{"outag@2", "consul@4"}},
		{"HangulBigrams", "클러스터의", []string{"클러@1", "러스@2", "스터@3", "터의@4"}},
		{"HangulSingleSyllable", "풀", []string{"풀@1"}},
		{"MixedScript", "Consul 클러스터", []string{"consul@1", "클러@2", "러스@3", "스터@4"}},
		{"NumberThenHangul", "73시간", []string{"73@1", "시간@2"}},
		{"GapAfterBigramsKept", "리더가 the 선출", []string{"리더@1", "더가@2", "선출@4"}},
		{"FullWidthFolded", "Ｒｅｄｉｓ", []string{"redi@1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := terms(c.text); !slices.Equal(got, c.want) {
				t.Errorf("analyze(%q) = %v, want %v", c.text, got, c.want)
			}
		})
	}
}

func TestSeedsFoundByKoreanAndEnglishWords(t *testing.T) {
	db := searchStore(t, seedIncidents(t))
	x := mustOpen(t, db)
	// A Korean word and an English word from each seed's own text; the
	// Korean ones sit inside longer runs of Hangul (particles attached).
	cases := []struct{ id, ko, en string }{
		{"IL-0213", "클러스터", "freelist"},
		{"IL-0214", "로테이션", "rotating"},
		{"IL-0215", "리더보드", "leaderboard"},
		{"IL-0216", "웹툰", "keepAlive"},
		{"IL-0217", "커넥션", "backoff"},
	}
	for _, c := range cases {
		t.Run(c.id+"/ko/"+c.ko, func(t *testing.T) {
			if got := ids(t, x, c.ko, inLang(incidentlib.LangKo)); !slices.Contains(got, c.id) {
				t.Errorf("%q in Korean found %v, not %s", c.ko, got, c.id)
			}
		})
		t.Run(c.id+"/en/"+c.en, func(t *testing.T) {
			if got := ids(t, x, c.en, inLang(incidentlib.LangEn)); !slices.Contains(got, c.id) {
				t.Errorf("%q in English found %v, not %s", c.en, got, c.id)
			}
		})
	}
	// Every seed, by the longest word of its Korean and of its English
	// title: the filter on its id shows that the word finds it, wherever
	// it ranks among the others.
	for _, in := range seedIncidents(t) {
		for _, c := range []struct {
			lang incidentlib.Lang
			text string
			keep func(rune) bool
		}{
			{incidentlib.LangKo, in.Title.Ko, isHangul},
			{incidentlib.LangEn, in.Title.En, func(r rune) bool { return r < 0x80 && unicode.IsLetter(r) }},
		} {
			word := ""
			for _, w := range strings.FieldsFunc(c.text, func(r rune) bool { return !c.keep(r) }) {
				if len([]rune(w)) > len([]rune(word)) && len(terms(w)) > 0 { // not a stop word
					word = w
				}
			}
			if word == "" {
				continue
			}
			t.Run(in.ID+"/"+string(c.lang)+"/"+word, func(t *testing.T) {
				p := run(t, x, word, inLang(c.lang), withFilter(incidentlib.IncidentFilter{IDs: []string{in.ID}}))
				if len(p.Hits) != 1 || p.Hits[0].ID != in.ID {
					t.Errorf("%q does not find %s", word, in.ID)
				}
			})
		}
	}
	t.Run("MixedKoreanEnglish", func(t *testing.T) {
		got := ids(t, x, `"Consul 클러스터"`, inLang(incidentlib.LangKo))
		if len(got) == 0 || got[0] != "IL-0213" {
			t.Errorf(`"Consul 클러스터" found %v, want IL-0213 first`, got)
		}
	})
	t.Run("KoreanPhrase", func(t *testing.T) {
		if got := ids(t, x, `"커넥션 풀"`); !slices.Contains(got, "IL-0217") {
			t.Errorf(`"커넥션 풀" found %v, want IL-0217`, got)
		}
	})
}

func handMade() []*incidentlib.Incident {
	return []*incidentlib.Incident{
		inc("IL-0001", "Acme", "Leader election stalled the cluster", "The cluster could not elect a leader.", "Watch the election timeout."),
		inc("IL-0002", "Acme", "Elections everywhere", "A leader was lost and the election of a new leader took an hour; leader leader leader.", "Keep elections short."),
		inc("IL-0003", "Globex", "Disk full on the primary", "Several outages followed when the disk filled; the leader and the election were unaffected.", "Alert on disk usage."),
		inc("IL-0004", "Globex", "Certificate expired", "An expired certificate caused an outage of the API.", "Automate certificate renewal & check <expiry>."),
		inc("IL-0005", "Initech", "Consul KV writes slowed", "Consul streaming contended under load.", "Split the Consul cluster."),
		inc("IL-0006", "Initech", "Routing degraded", "Traffic routing used Consul for service discovery and slowed with it.", "Monitor without depending on Consul."),
		inc("IL-0007", "Hooli", "커넥션 풀 고갈로 결제가 멈췄다", "기본 커넥션 풀 8 개가 모자라 Redis 연결이 병목이 됐다.", "풀 크기를 부하 시험으로 정한다."),
	}
}

func TestQueries(t *testing.T) {
	db := searchStore(t, handMade())
	x := mustOpen(t, db)
	cases := []struct {
		name, query string
		want        []string
	}{
		{"StemmingPluralFindsSingular", "outages", []string{"IL-0003", "IL-0004"}},
		{"StemmingSingularFindsPlural", "outage", []string{"IL-0003", "IL-0004"}},
		{"CaseFolded", "CONSUL", []string{"IL-0005", "IL-0006"}},
		{"StopWordIgnored", "the certificate", []string{"IL-0004"}},
		{"EveryWordMustMatch", "leader disk", []string{"IL-0003"}},
		{"Phrase", `"leader election"`, []string{"IL-0001"}},
		{"PhraseAcrossStopWord", `"election of a new leader"`, []string{"IL-0002"}},
		{"Exclusion", "leader -disk", []string{"IL-0001", "IL-0002"}},
		{"ExcludedPhrase", `leader -"leader election"`, []string{"IL-0002", "IL-0003"}},
		{"TitlePrefix", "title:consul", []string{"IL-0005"}},
		{"TitlePhrasePrefix", `title:"leader election"`, []string{"IL-0001"}},
		{"LessonsPrefix", "lessons:consul", []string{"IL-0005", "IL-0006"}},
		{"LessonsPrefixExcludesSummary", "lessons:leader", []string{}},
		{"OrgPrefix", "org:globex", []string{"IL-0003", "IL-0004"}},
		{"OrgPrefixCaseInsensitive", "ORG:Globex certificate", []string{"IL-0004"}},
		{"KoreanWordInsideLongerRun", "고갈", []string{"IL-0007"}},
		{"KoreanPhrase", `"커넥션 풀"`, []string{"IL-0007"}},
		{"MixedScripts", "Redis 병목", []string{"IL-0007"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ids(t, x, c.query); !sameSet(got, c.want) {
				t.Errorf("%q found %v, want %v", c.query, got, c.want)
			}
		})
	}
	t.Run("LangLimitsTheFields", func(t *testing.T) {
		if got := ids(t, x, "커넥션", inLang(incidentlib.LangEn)); len(got) != 0 {
			t.Errorf("a Korean word in English text found %v", got)
		}
		if got := ids(t, x, "커넥션", inLang(incidentlib.LangKo)); !slices.Equal(got, []string{"IL-0007"}) {
			t.Errorf("a Korean word in Korean text found %v", got)
		}
	})
}

func TestRanking(t *testing.T) {
	db := searchStore(t, handMade())
	x := mustOpen(t, db)
	t.Run("ExactPhraseInTitleFirst", func(t *testing.T) {
		// IL-0002 says leader and election far more often, but IL-0001
		// has the words as a phrase in its title.
		got := ids(t, x, "leader election")
		if !slices.Equal(got, []string{"IL-0001", "IL-0002", "IL-0003"}) {
			t.Errorf("leader election ranked %v", got)
		}
	})
	t.Run("TitleAboveSummaryAndLessons", func(t *testing.T) {
		got := ids(t, x, "consul")
		if !slices.Equal(got, []string{"IL-0005", "IL-0006"}) {
			t.Errorf("consul ranked %v", got)
		}
	})
	t.Run("ScoresDescend", func(t *testing.T) {
		hits := run(t, x, "leader").Hits
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("hit %d scores %v above hit %d at %v", i, hits[i].Score, i-1, hits[i-1].Score)
			}
		}
	})
}

func TestHighlights(t *testing.T) {
	db := searchStore(t, append(handMade(), seedIncidents(t)[0]))
	x := mustOpen(t, db)
	find := func(p *incidentlib.SearchPage, id string) incidentlib.SearchHit {
		for _, h := range p.Hits {
			if h.ID == id {
				return h
			}
		}
		t.Fatalf("%s not found", id)
		return incidentlib.SearchHit{}
	}
	t.Run("StemmedWordMarkedAsWritten", func(t *testing.T) {
		h := find(run(t, x, "outage"), "IL-0003")
		want := []incidentlib.Highlight{{Field: "summary", Lang: incidentlib.LangEn,
			Snippet: "Several <mark>outages</mark> followed when the disk filled; the leader and the election were unaffected."}}
		if !slices.Equal(h.Highlights, want) {
			t.Errorf("highlights %+v, want %+v", h.Highlights, want)
		}
	})
	t.Run("TextAroundEscaped", func(t *testing.T) {
		h := find(run(t, x, "renewal"), "IL-0004")
		want := "Automate certificate <mark>renewal</mark> &amp; check &lt;expiry&gt;."
		if len(h.Highlights) != 1 || h.Highlights[0].Field != "lessons" || h.Highlights[0].Snippet != want {
			t.Errorf("highlights %+v, want lessons %q", h.Highlights, want)
		}
	})
	t.Run("EveryMatchingFieldInOrder", func(t *testing.T) {
		h := find(run(t, x, "consul"), "IL-0005")
		var got []string
		for _, hl := range h.Highlights {
			got = append(got, hl.Field)
			if !strings.Contains(hl.Snippet, "<mark>Consul</mark>") {
				t.Errorf("%s: %q does not mark Consul", hl.Field, hl.Snippet)
			}
		}
		if !slices.Equal(got, []string{"title", "summary", "lessons"}) {
			t.Errorf("fields %v", got)
		}
	})
	t.Run("HangulWordMarkedWhole", func(t *testing.T) {
		h := find(run(t, x, "클러스터", inLang(incidentlib.LangKo)), "IL-0213")
		if len(h.Highlights) == 0 || h.Highlights[0].Field != "title" || h.Highlights[0].Lang != incidentlib.LangKo {
			t.Fatalf("highlights %+v, want the Korean title first", h.Highlights)
		}
		if s := h.Highlights[0].Snippet; !strings.HasPrefix(s, "Consul <mark>클러스터</mark>의 KV") {
			t.Errorf("title snippet %q", s)
		}
		for _, hl := range h.Highlights {
			if hl.Lang != incidentlib.LangKo {
				t.Errorf("a %s highlight in a Korean search", hl.Lang)
			}
		}
	})
	t.Run("LongTextCutAroundTheMatch", func(t *testing.T) {
		h := find(run(t, x, "freelist"), "IL-0213")
		for _, hl := range h.Highlights {
			if hl.Field != "summary" {
				continue
			}
			if !strings.HasPrefix(hl.Snippet, "…") || !strings.Contains(hl.Snippet, "<mark>freelist</mark>") {
				t.Errorf("summary snippet %q", hl.Snippet)
			}
			if n := len([]rune(hl.Snippet)); n > snippetRunes+40 {
				t.Errorf("summary snippet is %d runes long", n)
			}
			return
		}
		t.Errorf("no summary highlight in %+v", h.Highlights)
	})
	t.Run("PhraseMarksOnlyThePhrase", func(t *testing.T) {
		h := find(run(t, x, `"leader election"`), "IL-0001")
		if len(h.Highlights) != 1 || h.Highlights[0].Snippet != "<mark>Leader</mark> <mark>election</mark> stalled the cluster" {
			t.Errorf("highlights %+v", h.Highlights)
		}
	})
}

func TestBadQueries(t *testing.T) {
	db := searchStore(t, handMade())
	x := mustOpen(t, db)
	cases := map[string]string{
		"Empty":             "",
		"OnlySpaces":        "   \t ",
		"UnbalancedQuote":   `"leader election`,
		"QuoteInsideWord":   `lea"der`,
		"EmptyPhrase":       `leader ""`,
		"LoneDash":          "leader - disk",
		"UnknownPrefix":     "summary:leader",
		"PrefixWithNothing": "title:",
		"PrefixThenSpace":   "title: leader",
		"OnlyStopWords":     "the of and",
		"OnlyPunctuation":   "!!! ???",
		"TooLong":           strings.Repeat("a ", 600),
		"TooManyClauses":    strings.Repeat("leader ", 40),
		"InvalidUTF8":       "lead\xffer",
		"UnknownPrefixURL":  "http://example.com",
	}
	for name, q := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := x.Search(context.Background(), incidentlib.SearchQuery{Query: q}, incidentlib.PageArgs{})
			if code := incidentlib.ErrorCode(err); code != incidentlib.EBADQUERY {
				t.Errorf("%q: code %q (%v), want %s", q, code, err, incidentlib.EBADQUERY)
			}
			_, err = x.SearchFacets(context.Background(), incidentlib.SearchQuery{Query: q}, nil)
			if code := incidentlib.ErrorCode(err); code != incidentlib.EBADQUERY {
				t.Errorf("facets of %q: code %q, want %s", q, code, incidentlib.EBADQUERY)
			}
		})
	}
	// A lone negation means everything but: every incident, none of those
	// that hold a word excluded, in number order, with facets over them.
	t.Run("OnlyExclusions", func(t *testing.T) {
		all, leader, disk := run(t, x, "-zzzz"), run(t, x, "leader"), run(t, x, "disk")
		if all.TotalCount != len(handMade()) {
			t.Fatalf("-zzzz finds %d of %d", all.TotalCount, len(handMade()))
		}
		got := run(t, x, "-leader -disk")
		excluded := map[string]bool{}
		for _, h := range append(leader.Hits, disk.Hits...) {
			excluded[h.ID] = true
		}
		if len(excluded) == 0 || got.TotalCount != all.TotalCount-len(excluded) || len(got.Hits) != got.TotalCount {
			t.Fatalf("-leader -disk: %d of %d, %d excluded", got.TotalCount, all.TotalCount, len(excluded))
		}
		for i, h := range got.Hits {
			if excluded[h.ID] || i > 0 && h.ID < got.Hits[i-1].ID {
				t.Errorf("hit %d %s (excluded %v)", i, h.ID, excluded[h.ID])
			}
		}
		set, err := x.matchSet(context.Background(), incidentlib.SearchQuery{Query: "-leader -disk"})
		if err != nil || int(set.GetCardinality()) != got.TotalCount {
			t.Errorf("matchSet: %v %v", set, err)
		}
	})
	t.Run("NotBadQueries", func(t *testing.T) {
		for _, q := range []string{"14:00", "raft_threshold_mb", "keep-alive", "-disk leader", "IL-0213", "http", `"http://example.com"`} {
			if _, err := x.Search(context.Background(), incidentlib.SearchQuery{Query: q}, incidentlib.PageArgs{}); err != nil && incidentlib.ErrorCode(err) != "" {
				t.Errorf("%q: %v", q, err)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"leader", `"a b" -c title:d org:"e f"`, `-"`, "lessons:", "클러스터 -풀", `"커넥션풀 데이터베이스" 가나다라마바`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		clauses, err := parse(q)
		if err != nil {
			if incidentlib.ErrorCode(err) != incidentlib.EBADQUERY {
				t.Fatalf("%q: %v", q, err)
			}
			return
		}
		c, err := compile(clauses, "", nil)
		if err != nil {
			if incidentlib.ErrorCode(err) != incidentlib.EBADQUERY {
				t.Fatalf("%q: %v", q, err)
			}
			return
		}
		// What the postings are read with is a phrase too: a term at
		// each end, and no more places than the clause's terms.
		for _, cl := range append(slices.Clone(c.must), c.mustNot...) {
			if f := cl.find; len(f) == 0 || f[0] == "" || f[len(f)-1] == "" || len(f) > len(cl.terms) {
				t.Fatalf("%q: terms %q read as %q", q, cl.terms, f)
			}
		}
	})
}

func TestFilterWithQuery(t *testing.T) {
	incs, err := gen.Generate(gen.Options{Count: 400, Seed: 7, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	db := searchStore(t, incs)
	x := mustOpen(t, db)
	ctx := context.Background()
	everything := func(q string) []string { // every hit of q, walking the pages
		var out []string
		var after *string
		for {
			first := 37
			p, err := x.Search(ctx, incidentlib.SearchQuery{Query: q}, incidentlib.PageArgs{First: &first, After: after})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range p.Hits {
				out = append(out, h.ID)
			}
			if !p.HasNextPage {
				return out
			}
			after = &p.Hits[len(p.Hits)-1].Cursor
		}
	}
	yes := true
	filters := map[string]incidentlib.IncidentFilter{
		"Severity":     {Severities: []string{"sev1"}},
		"Organization": {Organizations: []string{incs[0].OrgSlug, incs[1].OrgSlug}},
		"Reviewed":     {Reviewed: &yes},
		"DateRange":    {DateFrom: ptr("2015-01-01"), DateTo: ptr("2019-12-31")},
	}
	for _, q := range []string{"retries", "memory -kubernetes"} {
		all := everything(q)
		if len(all) < 10 {
			t.Fatalf("%q found only %d incidents; the test needs more", q, len(all))
		}
		for name, f := range filters {
			t.Run(name+"/"+q, func(t *testing.T) {
				set, err := db.Incidents().MatchSet(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, id := range all {
					if n, _ := incidentlib.ParseID(id); set.Contains(n) {
						want = append(want, id)
					}
				}
				p := run(t, x, q, withFilter(f))
				var got []string
				for i, h := range p.Hits {
					got = append(got, h.ID)
					if i > 0 && h.Score > p.Hits[i-1].Score {
						t.Errorf("hit %d scores %v, above hit %d at %v", i, h.Score, i-1, p.Hits[i-1].Score)
					}
				}
				// The same incidents; the order may differ among near ties,
				// since bleve's BM25 estimates the average field length from
				// its segments, which merge in the background.
				if len(want) > incidentlib.MaxPageSize || !sameSet(got, want) {
					t.Errorf("filtered hits %v, want %v", got, want)
				}
				if p.TotalCount != len(want) {
					t.Errorf("totalCount %d, want %d", p.TotalCount, len(want))
				}
				facets, err := x.SearchFacets(ctx, incidentlib.SearchQuery{Query: q, Filter: f}, []incidentlib.TermKind{incidentlib.KindSeverity})
				if err != nil {
					t.Fatal(err)
				}
				counts := map[string]int{}
				byID := map[string]*incidentlib.Incident{}
				for _, in := range incs {
					byID[in.ID] = in
				}
				for _, id := range want {
					counts[byID[id].Severity]++
				}
				for _, c := range facets[0].Counts {
					if counts[c.Term.Slug] != c.Count {
						t.Errorf("facet %s: %d, want %d", c.Term.Slug, c.Count, counts[c.Term.Slug])
					}
					delete(counts, c.Term.Slug)
				}
				if len(counts) > 0 {
					t.Errorf("facets miss %v", counts)
				}
			})
		}
	}
	t.Run("FilterMatchingNothing", func(t *testing.T) {
		p := run(t, x, "redis", withFilter(incidentlib.IncidentFilter{Organizations: []string{"no-such-org"}}))
		if len(p.Hits) != 0 || p.TotalCount != 0 {
			t.Errorf("%d hits, totalCount %d", len(p.Hits), p.TotalCount)
		}
	})
	t.Run("FilterFollowsWrites", func(t *testing.T) {
		// A filter's incidents are kept between searches (filterBits):
		// a write that moves an incident into the filter, or deletes
		// one, is seen by the next search.
		f := incidentlib.IncidentFilter{Severities: []string{"sev1"}}
		all := everything("retries")
		var in, out *incidentlib.Incident
		for _, id := range all {
			for _, c := range incs {
				if c.ID == id && c.Severity == "sev1" && in == nil {
					in = c
				}
				if c.ID == id && c.Severity != "sev1" && out == nil {
					out = c
				}
			}
		}
		if in == nil || out == nil {
			t.Fatal("the corpus has no hit of each kind")
		}
		count := func() int { return run(t, x, "retries", withFilter(f)).TotalCount }
		before := count()
		if count() != before { // the second from the kept bitset
			t.Fatal("the same search counted twice differs")
		}
		moved := *out
		moved.Severity = "sev1"
		moved.Review.ReviewedAt, moved.Review.ReviewedBy = "", "" // set by reviewing only
		if _, err := db.Incidents().UpsertIncident(ctx, &moved, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := count(); got != before+1 {
			t.Errorf("after %s became sev1, the filtered search counts %d, want %d", out.ID, got, before+1)
		}
		if _, err := db.Incidents().DeleteIncident(ctx, in.ID, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := count(); got != before {
			t.Errorf("after %s was deleted, the filtered search counts %d, want %d", in.ID, got, before)
		}
	})
	t.Run("BadFilter", func(t *testing.T) {
		_, err := x.Search(ctx, incidentlib.SearchQuery{Query: "redis", Filter: incidentlib.IncidentFilter{DateFrom: ptr("2019-02-30")}}, incidentlib.PageArgs{})
		if code := incidentlib.ErrorCode(err); code != incidentlib.EINVALID {
			t.Errorf("code %q, want %s", code, incidentlib.EINVALID)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestPages(t *testing.T) {
	db := searchStore(t, handMade())
	x := mustOpen(t, db)
	ctx := context.Background()
	q := incidentlib.SearchQuery{Query: "leader"}
	all := ids(t, x, "leader")
	var walked []string
	var after *string
	one := 1
	for range 10 {
		p, err := x.Search(ctx, q, incidentlib.PageArgs{First: &one, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if p.TotalCount != len(all) || p.HasPreviousPage != (after != nil) {
			t.Errorf("page after %d: totalCount %d, hasPreviousPage %v", len(walked), p.TotalCount, p.HasPreviousPage)
		}
		for _, h := range p.Hits {
			walked = append(walked, h.ID)
		}
		if !p.HasNextPage {
			break
		}
		after = &p.Hits[0].Cursor
	}
	if !slices.Equal(walked, all) {
		t.Errorf("pages of one walked %v, want %v", walked, all)
	}
	bad := map[string]struct {
		page incidentlib.PageArgs
		code string
	}{
		"ErrCursorMalformed":      {incidentlib.PageArgs{After: ptr("not a cursor")}, incidentlib.EBADCURSOR},
		"ErrCursorOtherSearch":    {incidentlib.PageArgs{After: ptr(encodeCursor(12345, 0))}, incidentlib.EBADCURSOR},
		"ErrCursorTooDeep":        {incidentlib.PageArgs{After: ptr(encodeCursor(0, maxOffset))}, incidentlib.EBADCURSOR},
		"ErrFirstNegative":        {incidentlib.PageArgs{First: ptr(-1)}, incidentlib.EINVALID},
		"ErrFirstTooLarge":        {incidentlib.PageArgs{First: ptr(incidentlib.MaxPageSize + 1)}, incidentlib.EINVALID},
		"ErrBackwardNotSupported": {incidentlib.PageArgs{Last: ptr(1)}, incidentlib.EINVALID},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := x.Search(ctx, q, c.page)
			if code := incidentlib.ErrorCode(err); code != c.code {
				t.Errorf("code %q (%v), want %s", code, err, c.code)
			}
		})
	}
}

func TestConsistency(t *testing.T) {
	ctx := context.Background()
	t.Run("WriteThenSearch", func(t *testing.T) {
		db := searchStore(t, handMade())
		x := mustOpen(t, db)
		if got := ids(t, x, "kubernetes"); len(got) != 0 {
			t.Fatalf("found %v before the write", got)
		}
		if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc("IL-0100", "Acme", "Kubernetes upgrade drained every node", "", "")}, incidentlib.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := ids(t, x, "kubernetes"); !slices.Equal(got, []string{"IL-0100"}) {
			t.Errorf("after the write found %v", got)
		}
		// A change to an incident replaces what the index knew of it.
		if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc("IL-0100", "Acme", "Nomad upgrade drained every node", "", "")}, incidentlib.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := ids(t, x, "kubernetes"); len(got) != 0 {
			t.Errorf("the old text still finds %v", got)
		}
		if got := ids(t, x, "nomad"); !slices.Equal(got, []string{"IL-0100"}) {
			t.Errorf("the new text finds %v", got)
		}
		// Highlights are cut from the text stored now, also when the
		// record cache held the earlier version.
		if _, err := db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0100"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc("IL-0100", "Acme", "Nomad upgrade drained every rack", "", "")}, incidentlib.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		p := run(t, x, "nomad")
		if len(p.Hits) != 1 || len(p.Hits[0].Highlights) == 0 || !strings.Contains(p.Hits[0].Highlights[0].Snippet, "every rack") {
			t.Errorf("the highlight is not cut from the stored text: %+v", p.Hits)
		}
	})
	t.Run("DeleteThenSearch", func(t *testing.T) {
		db := searchStore(t, handMade())
		x := mustOpen(t, db)
		if got := ids(t, x, "certificate"); !slices.Equal(got, []string{"IL-0004"}) {
			t.Fatalf("before the delete found %v", got)
		}
		if _, err := db.Incidents().DeleteIncident(ctx, "IL-0004", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		p := run(t, x, "certificate")
		if len(p.Hits) != 0 || p.TotalCount != 0 {
			t.Errorf("after the delete found %+v", p)
		}
		if n, _ := x.DocCount(); n != uint64(len(handMade())-1) {
			t.Errorf("the index holds %d documents", n)
		}
	})
	t.Run("CatchUpAfterCrash", func(t *testing.T) {
		// The store commits while the index is closed: as if the process
		// died between the commit and the index update.
		db := searchStore(t, handMade())
		x, err := Open(ctx, db.Incidents(), indexPath(db), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc("IL-0100", "Acme", "Kubernetes upgrade drained every node", "", "")}, incidentlib.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Incidents().DeleteIncident(ctx, "IL-0004", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, err := Check(ctx, db.Incidents(), indexPath(db), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pending != 2 || len(rep.Problems) > 0 {
			t.Errorf("check of the closed index: %+v, want 2 pending and no problems", rep)
		}
		x = mustOpen(t, db)
		if x.Seq() != db.Incidents().Seq() {
			t.Errorf("reopened at sequence %d, the store is at %d", x.Seq(), db.Incidents().Seq())
		}
		if got := ids(t, x, "kubernetes"); !slices.Equal(got, []string{"IL-0100"}) {
			t.Errorf("the write made while closed: found %v", got)
		}
		if got := ids(t, x, "certificate"); len(got) != 0 {
			t.Errorf("the delete made while closed: found %v", got)
		}
	})
	t.Run("Follow", func(t *testing.T) {
		db := searchStore(t, handMade())
		x, err := Open(ctx, db.Incidents(), indexPath(db), Options{Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc("IL-0100", "Acme", "Kubernetes", "", "")}, incidentlib.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		// No search runs: Follow alone must bring the index level.
		for x.Seq() < db.Incidents().Seq() {
			select {
			case <-time.After(30 * time.Second):
				t.Fatalf("Follow left the index at %d, the store is at %d", x.Seq(), db.Incidents().Seq())
			case <-time.After(time.Millisecond):
			}
		}
		if err := x.Close(); err != nil { // stops following
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSearchTurns: no more searches run at once than Options.Concurrency;
// the others wait in line, and one whose request ends while it waits
// gives up with the request's error.
func TestSearchTurns(t *testing.T) {
	ctx := context.Background()
	db := searchStore(t, handMade())
	if _, err := Open(ctx, db.Incidents(), indexPath(db), Options{Concurrency: -1}); err == nil {
		t.Fatal("a negative concurrency was accepted")
	}
	x, err := Open(ctx, db.Incidents(), indexPath(db), Options{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	waitFor := func(n int) {
		t.Helper()
		for give := time.Now().Add(time.Minute); x.Waiting() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(give) {
				t.Fatalf("%d searches wait for their turn, want %d", x.Waiting(), n)
			}
		}
	}
	search := func(ctx context.Context, out chan<- error) {
		_, err := x.Search(ctx, incidentlib.SearchQuery{Query: "certificate"}, incidentlib.PageArgs{})
		out <- err
	}
	// The only turn is taken, as by a running search.
	if err := x.turns.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go search(ctx, waiting)
	waitFor(1)
	canceled := make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	go search(cctx, canceled)
	waitFor(2)
	select {
	case err := <-waiting:
		t.Fatalf("a search ran while the only turn was taken (err %v)", err)
	default:
	}
	cancel()
	if err := <-canceled; !errors.Is(err, context.Canceled) {
		t.Fatalf("a search whose request ended while it waited returned %v", err)
	}
	waitFor(1)
	// The match set of facets waits its turn too.
	facets := make(chan error, 1)
	go func() {
		_, err := x.SearchFacets(ctx, incidentlib.SearchQuery{Query: "outage"}, []incidentlib.TermKind{incidentlib.KindDomain})
		facets <- err
	}()
	waitFor(2)
	x.turns.Release(1)
	for _, c := range []chan error{waiting, facets} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(t, x, "certificate"); !slices.Equal(got, []string{"IL-0004"}) {
		t.Fatalf("after the line emptied found %v", got)
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	t.Run("Consistent", func(t *testing.T) {
		db := searchStore(t, handMade())
		mustOpen(t, db).Close()
		rep, err := Check(ctx, db.Incidents(), indexPath(db), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pending != 0 || len(rep.Problems) > 0 || rep.Missing {
			t.Errorf("report %+v", rep)
		}
	})
	t.Run("Missing", func(t *testing.T) {
		db := searchStore(t, handMade())
		rep, err := Check(ctx, db.Incidents(), indexPath(db), Options{})
		if err != nil || !rep.Missing {
			t.Errorf("report %+v, %v", rep, err)
		}
	})
	disagree := map[string]func(x *Index) error{
		"ExtraDocument": func(x *Index) error {
			return x.apply([]incidentlib.Change{{Seq: x.Seq(), ID: "IL-0999", Incident: inc("IL-0999", "Acme", "Ghost", "", "")}}, x.Seq())
		},
		"MissingDocument": func(x *Index) error {
			return x.apply([]incidentlib.Change{{Seq: x.Seq(), ID: "IL-0003", Deleted: true}}, x.Seq())
		},
		"StaleDocument": func(x *Index) error {
			return x.apply([]incidentlib.Change{{Seq: 1, ID: "IL-0005", Incident: handMade()[4]}}, x.Seq())
		},
	}
	for name, tamper := range disagree {
		t.Run(name, func(t *testing.T) {
			db := searchStore(t, handMade())
			x, err := Open(ctx, db.Incidents(), indexPath(db), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := tamper(x); err != nil {
				t.Fatal(err)
			}
			x.Close()
			rep, err := Check(ctx, db.Incidents(), indexPath(db), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != 1 {
				t.Errorf("problems %q, want one", rep.Problems)
			}
			// Rebuild repairs it.
			x, err = Rebuild(ctx, db.Incidents(), indexPath(db), Options{})
			if err != nil {
				t.Fatal(err)
			}
			x.Close()
			if rep, err := Check(ctx, db.Incidents(), indexPath(db), Options{}); err != nil || len(rep.Problems) > 0 {
				t.Errorf("after rebuild: %+v, %v", rep, err)
			}
		})
	}
	t.Run("IndexOfAnotherVersion", func(t *testing.T) {
		// An index written with an older analysis or layout (format 2 had
		// no Hangul trigrams) is rebuilt, never read.
		db := searchStore(t, handMade())
		mustOpen(t, db).Close()
		file := filepath.Join(indexPath(db), indexFile)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		old := []byte("incidentlib-search-2")
		if len(old) != len(formatVersion) || !bytes.Contains(b, []byte(formatVersion)) {
			t.Fatalf("the file does not hold %q where the test expects it", formatVersion)
		}
		b = bytes.Replace(b, []byte(formatVersion), old, 1)
		binary.BigEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, db.Incidents(), indexPath(db), Options{}); !errors.Is(err, ErrRebuild) || !strings.Contains(err.Error(), "incidentlib-search-2") {
			t.Fatalf("open: %v, want ErrRebuild naming the old format", err)
		}
		if rep, err := Check(ctx, db.Incidents(), indexPath(db), Options{}); err != nil || len(rep.Problems) != 1 {
			t.Errorf("check: %+v, %v", rep, err)
		}
		x, err := Rebuild(ctx, db.Incidents(), indexPath(db), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if got := ids(t, x, "커넥션"); len(got) == 0 {
			t.Error("the rebuilt index finds no 커넥션")
		}
	})
	t.Run("IndexOfAnotherStore", func(t *testing.T) {
		big := searchStore(t, handMade())
		x, err := Open(ctx, big.Incidents(), indexPath(big), Options{})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
		small := searchStore(t, handMade()[:2])
		_, err = Open(ctx, small.Incidents(), indexPath(big), Options{})
		if !errors.Is(err, ErrRebuild) {
			t.Errorf("open: %v, want ErrRebuild", err)
		}
		rep, err := Check(ctx, small.Incidents(), indexPath(big), Options{})
		if err != nil || len(rep.Problems) == 0 {
			t.Errorf("check: %+v, %v", rep, err)
		}
	})
}
