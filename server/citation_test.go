package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// citeTitle is a title with every character LaTeX reads specially.
const citeTitle = `{50% off} & $5_x #1 \ a~b^c`

// citeCorpus is the seeds with a dated incident whose title holds
// citeTitle and a Korean-only one.
func citeCorpus(t *testing.T) (incs []*incidentlib.Incident, special, korean *incidentlib.Incident) {
	t.Helper()
	incs = seedIncidents(t)
	special, korean = incs[0], incs[1]
	special.Title = incidentlib.Text{En: citeTitle}
	special.Date = "2019-07-02"
	korean.Title = incidentlib.Text{Ko: "결제 API 가 데이터베이스 장애로 40분 동안 중단됐다"}
	korean.Date = ""
	return incs, special, korean
}

// cslItem is a CSL-JSON item as the test reads it.
type cslItem struct {
	ID, Type, Title, URL, Version, Language, Number string
	Author                                          []struct{ Literal string }
	Issued, Accessed                                *struct {
		DateParts [][]int `json:"date-parts"`
	}
}

// cite asks for inc's citation in both styles (lang: KO too) through the
// handler, with host as the request's Host when not empty.
func cite(t *testing.T, base, host, id string) (bib string, csl, cslKo []cslItem, rawCSL string, resp *http.Response) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { incident(id: $id) {
		bib: citation(style: BIBTEX) csl: citation(style: CSL_JSON) ko: citation(style: CSL_JSON, lang: KO) } }`,
		"variables": map[string]any{"id": id}})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if host != "" {
		req.Host = host
	}
	resp, b := testutil.RoundTrip(t, req)
	var out struct {
		Data struct {
			Incident struct{ Bib, CSL, Ko string }
		}
		Errors []json.RawMessage
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Errors) > 0 || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v %s", resp.StatusCode, err, b)
	}
	for _, c := range []struct {
		text string
		to   *[]cslItem
	}{{out.Data.Incident.CSL, &csl}, {out.Data.Incident.Ko, &cslKo}} {
		if err := json.Unmarshal([]byte(c.text), c.to); err != nil || len(*c.to) != 1 {
			t.Fatalf("CSL-JSON is not an array of one item: %v\n%s", err, c.text)
		}
	}
	return out.Data.Incident.Bib, csl, cslKo, out.Data.Incident.CSL, resp
}

// bibField is a field of a BibTeX entry, as a reader finds its end: the
// braces that close the value, counting every brace.
func bibField(t *testing.T, entry, name string) string {
	t.Helper()
	i := strings.Index(entry, "\n  "+name+" = ")
	if i < 0 {
		t.Fatalf("no %s in\n%s", name, entry)
	}
	v := entry[i+len(name)+6:]
	if !strings.HasPrefix(v, "{") { // a macro such as jul
		return v[:strings.Index(v, ",")]
	}
	depth := 0
	for j, r := range v {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				if !strings.HasPrefix(v[j+1:], ",\n") {
					t.Fatalf("%s does not end with },: %q", name, v[:min(len(v), j+10)])
				}
				return v[1:j]
			}
		}
	}
	t.Fatalf("%s: unbalanced braces in\n%s", name, entry)
	return ""
}

// unLaTeX reads back the text BibTeXText escaped.
var unLaTeX = strings.NewReplacer(`\textbackslash{}`, `\`, `\textbraceleft{}`, `{`, `\textbraceright{}`, `}`, `\%`, `%`, `\&`, `&`,
	`\$`, `$`, `\#`, `#`, `\_`, `_`, `\textasciitilde{}`, `~`, `\textasciicircum{}`, `^`)

// latexSpecial finds a special character of LaTeX that is not escaped.
var latexSpecial = regexp.MustCompile(`(^|[^\\])[%&$#_]`)

// cslSchema is the CSL data schema (csl-data.json, from the Citation
// Style Language's schema repository, MIT), as citation/testdata carries
// it (its README says which version).
func cslSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "citation", "testdata", "csl-data.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("csl-data.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("csl-data.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCitations: Incident.citation through the handler, with and without
// --public-url: BibTeX whose braces balance, with LaTeX's specials escaped
// and Korean kept in UTF-8; CSL-JSON with every field, valid against the
// CSL data schema; the incident's address under the public URL or the
// request's own host; today (UTC) as the access date.
func TestCitations(t *testing.T) {
	incs, special, korean := citeCorpus(t)
	db := testutil.ServerStore(t, incs, storage.Options{})
	plain := serveStore(t, db, server.Config{}, testutil.ServerParts{})
	public := serveStore(t, db, server.Config{PublicURL: "https://incidents.example.org/lib/"}, testutil.ServerParts{})
	for _, c := range []struct {
		name, base, host, wantBase string
		inc                        *incidentlib.Incident
	}{
		{"Special/RequestHost", plain.URL, "", plain.URL, special},
		{"Special/OtherHost", plain.URL, "cite.example:8443", "http://cite.example:8443", special},
		{"Special/PublicURL", public.URL, "cite.example:8443", "https://incidents.example.org/lib", special},
		{"Korean/RequestHost", plain.URL, "", plain.URL, korean},
		{"Korean/PublicURL", public.URL, "", "https://incidents.example.org/lib", korean},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := time.Now().UTC()
			bib, csl, cslKo, raw, resp := cite(t, c.base, c.host, c.inc.ID)
			after := time.Now().UTC()
			url := c.wantBase + "/api/v1/incidents/" + c.inc.ID
			today := func(s string) bool { return s == before.Format(time.DateOnly) || s == after.Format(time.DateOnly) }
			title := c.inc.Title.In(incidentlib.LangEn)
			lang := map[bool]string{true: "ko", false: "en"}[c.inc.Title.En == ""]

			// BibTeX.
			if !strings.HasPrefix(bib, "@misc{"+c.inc.ID+",\n") || !strings.HasSuffix(bib, "\n}\n") {
				t.Fatalf("not a @misc entry keyed %s:\n%s", c.inc.ID, bib)
			}
			if n := strings.Count(bib, "{") - strings.Count(bib, "}"); n != 0 {
				t.Fatalf("braces do not balance (%d):\n%s", n, bib)
			}
			bt := bibField(t, bib, "title")
			if !strings.HasPrefix(bt, "{") || !strings.HasSuffix(bt, "}") || unLaTeX.Replace(bt[1:len(bt)-1]) != title || latexSpecial.MatchString(bt) {
				t.Errorf("title %q, want %q escaped for LaTeX", bt, title)
			}
			if got := bibField(t, bib, "author"); got != "{"+c.inc.Org+"}" {
				t.Errorf("author %q", got)
			}
			if bibField(t, bib, "url") != url || !today(bibField(t, bib, "urldate")) || bibField(t, bib, "version") != "1" {
				t.Errorf("url, urldate or version:\n%s", bib)
			}
			if c.inc == special && (bibField(t, bib, "date") != "2019-07-02" || bibField(t, bib, "year") != "2019" || bibField(t, bib, "month") != "jul") {
				t.Errorf("the date:\n%s", bib)
			}
			if c.inc == korean && (!strings.Contains(bib, korean.Title.Ko) || bibField(t, bib, "language") != "korean" || strings.Contains(bib, "year =")) {
				t.Errorf("Korean title, language, no date:\n%s", bib)
			}

			// CSL-JSON.
			it := csl[0]
			if it.ID != c.inc.ID || it.Type != "report" || it.Title != title || it.URL != url || it.Version != "1" || it.Number != c.inc.ID ||
				it.Language != lang || len(it.Author) != 1 || it.Author[0].Literal != c.inc.Org {
				t.Errorf("CSL item %+v", it)
			}
			if it.Accessed == nil || len(it.Accessed.DateParts) != 1 || !today(time.Date(it.Accessed.DateParts[0][0], time.Month(it.Accessed.DateParts[0][1]), it.Accessed.DateParts[0][2], 0, 0, 0, 0, time.UTC).Format(time.DateOnly)) {
				t.Errorf("accessed %+v, want today", it.Accessed)
			}
			switch c.inc {
			case special:
				if it.Issued == nil || !slices.Equal(it.Issued.DateParts[0], []int{2019, 7, 2}) {
					t.Errorf("issued %+v", it.Issued)
				}
			case korean:
				if it.Issued != nil || cslKo[0].Title != korean.Title.Ko || !strings.Contains(raw, korean.Title.Ko) {
					t.Errorf("undated Korean: issued %+v, title %q; UTF-8 as it is:\n%s", it.Issued, cslKo[0].Title, raw)
				}
			}
			if resp.Header.Get("Etag") != "" {
				t.Errorf("a response with a citation has an ETag: the cache kept it")
			}
		})
	}
	t.Run("Schema", func(t *testing.T) {
		s := cslSchema(t)
		for _, inc := range []*incidentlib.Incident{special, korean} {
			_, _, _, raw, _ := cite(t, public.URL, "", inc.ID)
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("%s: not valid CSL-JSON: %v\n%s", inc.ID, err, raw)
			}
		}
		// The schema refuses what is not CSL-JSON (the test would pass
		// nothing otherwise).
		bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`[{"id": "IL-0001", "type": "postmortem", "issued": "2019"}]`))
		if s.Validate(bad) == nil {
			t.Fatal("the schema takes an item of an unknown type")
		}
	})
}

// TestCitationsInLists: a page of incidents with citations is answered
// (the read executor hands the field to gqlgen's), each citation its own
// incident's, and never from the response cache: two hosts asking the same
// query get their own addresses. Each citation costs graph.CitationCost.
func TestCitationsInLists(t *testing.T) {
	incs, _, _ := citeCorpus(t)
	ts := serveStore(t, testutil.ServerStore(t, incs, storage.Options{}), server.Config{}, testutil.ServerParts{})
	cost := func(q string) int {
		var out struct{ Extensions struct{ Cost int } }
		b := postRaw(t, ts.URL, q, nil, "")
		if err := json.Unmarshal(b[len("200 "):], &out); err != nil || out.Extensions.Cost == 0 {
			t.Fatalf("%v %.300s", err, b)
		}
		return out.Extensions.Cost
	}
	if with, without := cost(`{ incidents(first: 10) { nodes { id c: citation(style: CSL_JSON) } } }`), cost(`{ incidents(first: 10) { nodes { id } } }`); with-without != 10*graph.CitationCost {
		t.Errorf("10 citations cost %d, want %d", with-without, 10*graph.CitationCost)
	}
	q, _ := json.Marshal(map[string]any{"query": `{ incidents(first: 10) { nodes { id citation(style: BIBTEX) } } }`})
	for _, host := range []string{"a.example", "b.example", "a.example"} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/graphql", bytes.NewReader(q))
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		resp, b := testutil.RoundTrip(t, req)
		var out struct {
			Data struct {
				Incidents struct {
					Nodes []struct{ ID, Citation string }
				}
			}
		}
		if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != http.StatusOK || len(out.Data.Incidents.Nodes) != 10 {
			t.Fatalf("%d %v %s", resp.StatusCode, err, b)
		}
		for _, n := range out.Data.Incidents.Nodes {
			if !strings.HasPrefix(n.Citation, "@misc{"+n.ID+",") || !strings.Contains(n.Citation, "url = {http://"+host+"/api/v1/incidents/"+n.ID+"}") {
				t.Fatalf("host %s: %s's citation\n%s", host, n.ID, n.Citation)
			}
		}
	}
}
