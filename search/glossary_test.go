package search

import (
	"context"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
	"github.com/incidentlib/incidentlib/seeds"
)

// crossStore holds incidents written in one language only.
func crossStore(tb testing.TB) (*Index, glossary.Reader) {
	tb.Helper()
	db := searchStore(tb, []*incidentlib.Incident{
		inc("IL-0001", "Alpha", "MySQL 복제 지연으로 결제가 멈췄다", "프라이머리의 복제 지연이 커져 읽기가 실패했다.", ""),
		inc("IL-0002", "Beta", "Replication lag stalled checkout", "The replica fell behind the primary during a schema change.", ""),
		inc("IL-0003", "Gamma", "A certificate expiry took the API down", "An expired certificate broke TLS handshakes.", ""),
		inc("IL-0004", "Delta", "인증서 만료로 API가 중단되었다", "만료된 인증서 때문에 TLS 핸드셰이크가 실패했다.", ""),
		inc("IL-0005", "Eps", "배포 중 메모리 누수", "새 버전의 롤아웃 뒤 메모리 누수가 드러났다.", ""),
		inc("IL-0006", "Zeta", "Lag in a replica of the search cluster", "Replication of the index lagged.", ""),
	})
	r, err := seeds.GlossaryReader()
	if err != nil {
		tb.Fatal(err)
	}
	x, err := Open(context.Background(), db.Incidents(), indexPath(db), Options{BatchSize: 64, Glossary: r})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x, r
}

func TestCrossLanguageSearch(t *testing.T) {
	x, _ := crossStore(t)
	for _, tc := range []struct {
		name, query string
		lang        incidentlib.Lang
		want        []string // in this order
	}{
		// The English record first (its own words), then the Korean one.
		{"EnglishFindsKorean", `"replication lag"`, "", []string{"IL-0002", "IL-0001"}},
		{"KoreanFindsEnglish", "인증서 만료", "", []string{"IL-0004", "IL-0003"}},
		// Each word found through the glossary: "replication lag" as one
		// phrase of the glossary, "mysql" as itself.
		{"SeveralWords", "mysql replication lag", "", []string{"IL-0001"}},
		{"SeveralWordsKorean", "메모리 누수 롤아웃", "", []string{"IL-0005"}},
		{"EnglishToKoreanRollout", "memory leak rollout", "", []string{"IL-0005"}},
		// The language limits where the translation is searched.
		{"LangKorean", "certificate expiry", incidentlib.LangKo, []string{"IL-0004"}},
		{"LangEnglishNoKoreanText", "memory leak", incidentlib.LangEn, []string{}},
		// A particle on the query's Korean word is looked up without it
		// (the Korean text, which lacks 인증서가, is not found: a particle
		// the query carries matches exactly).
		{"Particle", "인증서가 만료", "", []string{"IL-0003"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []searchOpt
			if tc.lang != "" {
				opts = append(opts, inLang(tc.lang))
			}
			got := ids(t, x, tc.query, opts...)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%q: %v, want %v", tc.query, got, tc.want)
			}
		})
	}
}

// TestTranslationRanksBelow: the hits of the query's own words come first
// even when a translation's hit would score higher, pages and counts
// follow the two tiers, and highlights say which matched through the
// glossary.
func TestTranslationRanksBelow(t *testing.T) {
	x, _ := crossStore(t)
	p := run(t, x, "replication lag")
	got := []string{}
	for _, h := range p.Hits {
		got = append(got, h.ID)
	}
	// IL-0006 has both words apart (its own words); IL-0001 has 복제 지연
	// in its title, which scores higher than IL-0006's words in the body.
	if len(got) != 3 || got[2] != "IL-0001" || p.TotalCount != 3 {
		t.Fatalf("got %v (total %d), want the English records, then IL-0001", got, p.TotalCount)
	}
	for _, h := range p.Hits {
		for _, hl := range h.Highlights {
			want := h.ID == "IL-0001"
			if hl.Translated != want {
				t.Errorf("%s %s/%s: translated %v, want %v (%s)", h.ID, hl.Field, hl.Lang, hl.Translated, want, hl.Snippet)
			}
			if want && hl.Lang != incidentlib.LangKo {
				t.Errorf("%s: a translated highlight in %q", h.ID, hl.Lang)
			}
		}
		if len(h.Highlights) == 0 {
			t.Errorf("%s: no highlight", h.ID)
		}
	}
	// One hit per page gives the same order across the tiers.
	var paged []string
	var after *string
	for range 4 {
		one := 1
		pg, err := x.Search(context.Background(), incidentlib.SearchQuery{Query: "replication lag"}, incidentlib.PageArgs{First: &one, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if pg.TotalCount != 3 {
			t.Fatalf("total %d on a page", pg.TotalCount)
		}
		if len(pg.Hits) == 0 {
			break
		}
		paged = append(paged, pg.Hits[0].ID)
		after = &pg.Hits[0].Cursor
	}
	if !slices.Equal(paged, got) {
		t.Fatalf("page by page %v, at once %v", paged, got)
	}
	// Without the glossary the Korean record is not found.
	db := x.db
	plain, err := Open(context.Background(), db, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got := ids(t, plain, "replication lag"); slices.Contains(got, "IL-0001") {
		t.Fatalf("found without a glossary: %v", got)
	}
}

// TestTranslationExcludes: an excluded word excludes its translation too.
func TestTranslationExcludes(t *testing.T) {
	x, _ := crossStore(t)
	got := ids(t, x, "tls -\"certificate expiry\"")
	if len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}

func TestGlossKey(t *testing.T) {
	for in, want := range map[string]string{
		"Replication lag":   "replic lag",
		"복제 지연":             "복제지연",
		"복제지연":              "복제지연",
		"rate limiting":     "rate limit",
		"DNS·CDN":           "dn cdn",
		"TLS 핸드셰이크":         "tl 핸드셰이크",
		"the load balancer": "load balanc",
	} {
		if got, _ := glossKey(in); got != want {
			t.Errorf("glossKey(%q) = %q, want %q", in, got, want)
		}
	}
}
