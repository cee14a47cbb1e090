package server_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// oneLanguage is a record written in one language only, its texts in
// English unless they hold Hangul.
func oneLanguage(id, org, title, summary string) *incidentlib.Incident {
	text := func(s string) incidentlib.Text {
		if strings.ContainsFunc(s, func(r rune) bool { return r >= 0xAC00 && r <= 0xD7A3 }) {
			return incidentlib.Text{Ko: s}
		}
		return incidentlib.Text{En: s}
	}
	return &incidentlib.Incident{ID: id, Org: org, OrgSlug: strings.ToLower(org), Title: text(title), Summary: text(summary),
		Severity: "sev2", UpdatedAt: "2026-01-01T00:00:00Z"}
}

// crossLanguageServer serves records written in one language each, with
// search translating through the built-in glossary, twice: by the fast
// read path and by gqlgen's executor.
func crossLanguageServer(t *testing.T) *fastPair {
	t.Helper()
	db := testutil.ServerStore(t, []*incidentlib.Incident{
		oneLanguage("IL-0001", "Alpha", "MySQL 복제 지연으로 결제가 멈췄다", "프라이머리의 복제 지연이 커져 읽기가 실패했다."),
		oneLanguage("IL-0002", "Beta", "Replication lag stalled checkout", "The replica fell behind the primary during a schema change."),
		oneLanguage("IL-0003", "Gamma", "Lag in a replica of the search cluster", "Replication of the index lagged behind."),
		oneLanguage("IL-0004", "Delta", "인증서 만료로 API가 중단되었다", "만료된 인증서 때문에 TLS 핸드셰이크가 실패했다."),
		oneLanguage("IL-0005", "Eps", "A certificate expiry took the API down", "An expired certificate broke TLS handshakes."),
		oneLanguage("IL-0006", "Zeta", "Disk full on build agents", "Build agents ran out of disk space."),
	}, storage.Options{})
	gloss, err := seeds.GlossaryReader()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := search.Open(context.Background(), db.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{Glossary: gloss})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	p := &fastPair{db: &testServer{&testutil.Served{DB: db}}}
	for _, generic := range []bool{false, true} {
		hs, _ := testutil.ServerTest(t, db, server.Config{ResponseCacheBytes: -1, GenericExecutor: generic}, testutil.ServerParts{Search: idx})
		if generic {
			p.generic = hs
		} else {
			p.fast = hs
		}
	}
	return p
}

type crossHit struct {
	Node       struct{ ID string }
	Highlights []struct{ Field, Lang, Via, Snippet string }
}

func crossSearch(t *testing.T, p *fastPair, query string, lang string) []crossHit {
	t.Helper()
	doc := `query($q: String!, $lang: Lang) { search(query: $q, lang: $lang) { totalCount edges { node { id } highlights { field lang via snippet } } } }`
	vars := map[string]any{"q": query}
	if lang != "" {
		vars["lang"] = lang
	}
	raw := p.compare(t, doc, vars, "")
	var out struct {
		Data struct {
			Search struct {
				TotalCount int
				Edges      []crossHit
			}
		}
		Errors []any
	}
	if err := json.Unmarshal(raw[strings.IndexByte(string(raw), ' ')+1:], &out); err != nil || len(out.Errors) > 0 {
		t.Fatalf("%q: %s (%v)", query, raw, err)
	}
	if out.Data.Search.TotalCount != len(out.Data.Search.Edges) {
		t.Fatalf("%q: totalCount %d, %d edges", query, out.Data.Search.TotalCount, len(out.Data.Search.Edges))
	}
	return out.Data.Search.Edges
}

func hitIDs(hs []crossHit) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Node.ID)
	}
	return out
}

// TestCrossLanguageSearchThroughTheAPI: an English query finds records
// written only in Korean and the reverse, several words each found through
// the glossary find a record, the other language's hits rank after the
// query's own, and their highlights say they matched through a translation,
// on both executors.
func TestCrossLanguageSearchThroughTheAPI(t *testing.T) {
	p := crossLanguageServer(t)
	for _, tc := range []struct {
		name, query, lang string
		want              []string
		translated        []string // the hits whose highlights are all TRANSLATION
	}{
		{"EnglishFindsKorean", "replication lag", "", []string{"IL-0002", "IL-0003", "IL-0001"}, []string{"IL-0001"}},
		{"KoreanFindsEnglish", "인증서 만료", "", []string{"IL-0004", "IL-0005"}, []string{"IL-0005"}},
		{"SeveralWords", "mysql replication lag", "", []string{"IL-0001"}, nil},
		{"SeveralWordsKoreanToEnglish", "인증서 만료 API", "", []string{"IL-0004", "IL-0005"}, nil},
		{"OneLanguage", "certificate expiry", "KO", []string{"IL-0004"}, []string{"IL-0004"}},
		{"NoGlossaryWord", "agents", "", []string{"IL-0006"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits := crossSearch(t, p, tc.query, tc.lang)
			if got := hitIDs(hits); !slices.Equal(got, tc.want) {
				t.Fatalf("%q: %v, want %v", tc.query, got, tc.want)
			}
			for _, h := range hits {
				if len(h.Highlights) == 0 {
					t.Errorf("%s: no highlight", h.Node.ID)
				}
				for _, hl := range h.Highlights {
					want := "QUERY"
					if slices.Contains(tc.translated, h.Node.ID) {
						want = "TRANSLATION"
						other := "KO" // the language the query is not in
						if strings.ContainsFunc(tc.query, func(r rune) bool { return r >= 0xAC00 && r <= 0xD7A3 }) {
							other = "EN"
						}
						if hl.Lang != other {
							t.Errorf("%s: a translation of %q highlighted in %s", h.Node.ID, tc.query, hl.Lang)
						}
					}
					if hl.Via != want && !(tc.translated == nil && hl.Via == "TRANSLATION") {
						t.Errorf("%s %s/%s: via %s, want %s (%s)", h.Node.ID, hl.Field, hl.Lang, hl.Via, want, hl.Snippet)
					}
				}
			}
		})
	}
}

// TestSimilarAcrossLanguages: a Korean-only record is similar to the
// English-only one about the same thing through the glossary's words, with
// no taxonomy term shared.
func TestSimilarAcrossLanguages(t *testing.T) {
	p := crossLanguageServer(t)
	raw := p.compare(t, `{ incident(id: "IL-0001") { similar(first: 3) { incident { id } score sharedTerms { slug } sharedWords } } }`, nil, "")
	var out struct {
		Data struct {
			Incident struct {
				Similar []struct {
					Incident    struct{ ID string }
					Score       float64
					SharedTerms []struct{ Slug string }
					SharedWords []string
				}
			}
		}
	}
	if err := json.Unmarshal(raw[strings.IndexByte(string(raw), ' ')+1:], &out); err != nil {
		t.Fatal(err)
	}
	sims := out.Data.Incident.Similar
	if len(sims) == 0 || sims[0].Incident.ID != "IL-0002" {
		t.Fatalf("similar to IL-0001: %s", raw)
	}
	if !slices.Contains(sims[0].SharedWords, "replication lag") || len(sims[0].SharedTerms) != 0 || sims[0].Score <= 0 {
		t.Fatalf("IL-0002 shares %v and terms %v, score %v", sims[0].SharedWords, sims[0].SharedTerms, sims[0].Score)
	}
	for _, s := range sims {
		if s.Incident.ID == "IL-0006" {
			t.Fatalf("the unrelated record is similar: %s", raw)
		}
	}
}
