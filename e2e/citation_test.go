package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// citedTitle is a title with every character LaTeX reads specially, so
// that a BibTeX reader must undo each of the library's escapes.
const citedTitle = `{50% off} & $5_x #1 \ a~b^c`

// citationCase is one incident's citations as the handler serves them.
type citationCase struct {
	ID     string `json:"id"`
	BibTeX string `json:"bibtex"`
	CSL    string `json:"csl"`
	// What a reader must find in them.
	title, org, url string
	year            int // 0: undated
}

// straightQuotes undoes the typographic quotes of a rendered entry.
var straightQuotes = strings.NewReplacer("‘", "'", "’", "'", "“", `"`, "”", `"`)

// consumerRead is what citation.mjs says of one case.
type consumerRead struct {
	Items []struct {
		Title  string
		URL    string
		Author []struct{ Literal, Family string }
		Issued *struct {
			DateParts [][]int `json:"date-parts"`
		}
	}
	APA   string
	Error string
}

// TestCitationsWithCitationJS reads Incident.citation from the real
// handler as its consumers do (citation.mjs): every CSL-JSON is valid
// against the official CSL data schema (citation/testdata/csl-data.json)
// by ajv, and citation-js (the versions pinned in package-lock.json)
// parses both the BibTeX entry and the CSL-JSON and renders from each an
// APA bibliography entry holding the title, the organization and the
// year (n.d. for an undated incident). The cases are a dated incident
// whose title holds every LaTeX special character, a Korean-only undated
// one and a seed as it is.
func TestCitationsWithCitationJS(t *testing.T) {
	node := nodeAudit(t)
	incs := testutil.SeedIncidents(t)
	special, korean, plain := incs[0], incs[1], (*incidentlib.Incident)(nil)
	for _, inc := range incs[2:] {
		if len(inc.Date) >= 4 && inc.Title.En != "" && inc.Org != "" {
			plain = inc
			break
		}
	}
	if plain == nil {
		t.Fatal("no seed has a date, an English title and an organization")
	}
	special.Title, special.Date = incidentlib.Text{En: citedTitle}, "2019-07-02"
	korean.Title, korean.Date = incidentlib.Text{Ko: "결제 API 가 데이터베이스 장애로 40분 동안 중단됐다"}, ""
	ts, _ := testutil.ServerTest(t, testutil.ServerStore(t, incs, storage.Options{}), server.Config{}, testutil.ServerParts{})

	var cases []citationCase
	for _, inc := range []*incidentlib.Incident{special, korean, plain} {
		r := testutil.PostGraphQL(t, ts, map[string]any{"query": `query($id: ID!) { incident(id: $id) {
			bib: citation(style: BIBTEX) csl: citation(style: CSL_JSON) } }`, "variables": map[string]any{"id": inc.ID}})
		var out struct {
			Data struct{ Incident struct{ Bib, CSL string } }
		}
		if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || r.Code() != "" || out.Data.Incident.CSL == "" {
			t.Fatalf("%s: %d %v %s", inc.ID, r.Status, err, r.Body)
		}
		c := citationCase{ID: inc.ID, BibTeX: out.Data.Incident.Bib, CSL: out.Data.Incident.CSL,
			title: inc.Title.In(incidentlib.LangEn), org: inc.Org, url: ts.URL + "/api/v1/incidents/" + inc.ID}
		if len(inc.Date) >= 4 {
			c.year, _ = strconv.Atoi(inc.Date[:4])
		}
		cases = append(cases, c)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(in, []byte(testutil.MustJSON(cases)), 0o644); err != nil {
		t.Fatal(err)
	}
	schema, err := filepath.Abs(filepath.Join("..", "citation", "testdata", "csl-data.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw := runNode(t, "", nil, node, "citation.mjs", in, schema)
	var got struct {
		SchemaRefusesBad bool
		Cases            []struct {
			ID                  string
			CSLErrors           []string
			FromBibtex, FromCSL consumerRead
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Cases) != len(cases) {
		t.Fatalf("citation.mjs: %v\n%s", err, raw)
	}
	if !got.SchemaRefusesBad {
		t.Fatal("the schema takes an item of an unknown type: its checks would pass anything")
	}
	for i, c := range cases {
		g := got.Cases[i]
		t.Run(c.ID, func(t *testing.T) {
			if len(g.CSLErrors) > 0 {
				t.Errorf("not valid against the CSL data schema: %s\n%s", strings.Join(g.CSLErrors, "; "), c.CSL)
			}
			for name, r := range map[string]consumerRead{"BibTeX": g.FromBibtex, "CSL-JSON": g.FromCSL} {
				if r.Error != "" || len(r.Items) != 1 {
					t.Errorf("citation-js does not read the %s: %s (%d items)", name, r.Error, len(r.Items))
					continue
				}
				it := r.Items[0]
				if it.Title != c.title || it.URL != c.url {
					t.Errorf("%s read back: title %q, URL %q; want %q, %q", name, it.Title, it.URL, c.title, c.url)
				}
				if len(it.Author) != 1 || it.Author[0].Literal+it.Author[0].Family != c.org {
					t.Errorf("%s read back: author %+v, want the organization %q as one name", name, it.Author, c.org)
				}
				year := "n.d."
				if c.year != 0 {
					year = strconv.Itoa(c.year)
					if it.Issued == nil || len(it.Issued.DateParts) == 0 || it.Issued.DateParts[0][0] != c.year {
						t.Errorf("%s read back: issued %+v, want %d", name, it.Issued, c.year)
					}
				}
				// APA sets quotes typographically: ' is ’ in the entry.
				apa := straightQuotes.Replace(r.APA)
				for _, want := range []string{c.title, c.org, "(" + year} {
					if !strings.Contains(apa, want) {
						t.Errorf("the APA entry from the %s lacks %q:\n%s", name, want, r.APA)
					}
				}
			}
			if t.Failed() {
				t.Logf("BibTeX:\n%s\nCSL-JSON:\n%s", c.BibTeX, c.CSL)
			}
		})
	}
}
