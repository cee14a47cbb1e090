package server_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/server/restapi"
	"github.com/incidentlib/incidentlib/storage"
)

// exportCorpus is the seeds and a generated corpus, with cells a
// spreadsheet would take for formulas.
func exportCorpus(t *testing.T) []*incidentlib.Incident {
	incs := append(seedIncidents(t), corpus(t, 260, 23)...)
	incs[len(incs)-1].Title.En = `=HYPERLINK("http://example.org","click")`
	incs[len(incs)-2].Summary.En = "-1 server, \"quoted\", and a\nsecond line"
	incs[len(incs)-3].Title.En = "@SUM(A1:A2)"
	incs[len(incs)-4].Title.En = "'Quoted' in its own title"
	return incs
}

func httpGet(t *testing.T, u string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return testutil.RoundTrip(t, req)
}

// graphqlRows pages through incidents(filter) and returns the CSV rows the
// GraphQL answer makes, with the export's columns.
func graphqlRows(t *testing.T, base string, filter map[string]any) [][]string {
	t.Helper()
	const doc = `query($f: IncidentFilter, $a: String) { incidents(filter: $f, first: 100, after: $a) {
		pageInfo { hasNextPage endCursor }
		nodes { id date org languages titleEn: title(lang: EN) titleKo: title(lang: KO) summaryEn: summary(lang: EN) summaryKo: summary(lang: KO)
			domains { slug } symptoms { slug } components { slug } rootCause { slug } severity { slug }
			timeline { detectedAfter resolvedAfter } url updatedAt } } }`
	type slug struct{ Slug string }
	var rows [][]string
	var after *string
	for {
		body, _ := json.Marshal(map[string]any{"query": doc, "variables": map[string]any{"f": filter, "a": after}})
		resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Data struct {
				Incidents struct {
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
					Nodes []struct {
						ID, Org                                string
						Date, URL, UpdatedAt                   *string
						Languages                              []string
						TitleEn, TitleKo, SummaryEn, SummaryKo *string
						Domains, Symptoms, Components          []slug
						RootCause, Severity                    *slug
						Timeline                               struct{ DetectedAfter, ResolvedAfter *string }
					}
				}
			}
			Errors []json.RawMessage
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || len(out.Errors) > 0 {
			t.Fatalf("GraphQL: %v %s", err, out.Errors)
		}
		str := func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		}
		in := func(s *string, lang string, langs []string) string {
			if !slices.Contains(langs, lang) {
				return "" // the export has no fallback to the other language
			}
			return str(s)
		}
		slugs := func(ts []slug) string {
			var out []string
			for _, t := range ts {
				out = append(out, t.Slug)
			}
			return strings.Join(out, ";")
		}
		one := func(t *slug) string {
			if t == nil {
				return ""
			}
			return t.Slug
		}
		for _, n := range out.Data.Incidents.Nodes {
			row := []string{n.ID, str(n.Date), n.Org, in(n.TitleEn, "EN", n.Languages), in(n.TitleKo, "KO", n.Languages),
				in(n.SummaryEn, "EN", n.Languages), in(n.SummaryKo, "KO", n.Languages),
				slugs(n.Domains), slugs(n.Symptoms), slugs(n.Components), one(n.RootCause), one(n.Severity),
				str(n.Timeline.DetectedAfter), str(n.Timeline.ResolvedAfter), str(n.URL), str(n.UpdatedAt)}
			for i, c := range row {
				if c != "" && strings.ContainsRune("=+-@'", rune(c[0])) {
					row[i] = "'" + c
				}
			}
			rows = append(rows, row)
		}
		if !out.Data.Incidents.PageInfo.HasNextPage {
			return rows
		}
		after = out.Data.Incidents.PageInfo.EndCursor
	}
}

// TestCSVExportEqualsGraphQL: the CSV export, parsed back by encoding/csv,
// holds for each filter exactly the rows the GraphQL answer for the same
// filter makes, in its order, after a UTF-8 BOM and the header row.
func TestCSVExportEqualsGraphQL(t *testing.T) {
	ts := serveStore(t, testutil.ServerStore(t, exportCorpus(t), storage.Options{}), server.Config{}, testutil.ServerParts{})
	cases := []struct {
		name, query string
		filter      map[string]any
	}{
		{"Everything", "", nil},
		{"Symptoms", "symptoms=high-latency,service-unavailable", map[string]any{"symptoms": []string{"high-latency", "service-unavailable"}}},
		{"DatesAndDomains", "dateFrom=2019-01-01&dateTo=2023-12-31&domains=database", map[string]any{"dateFrom": "2019-01-01", "dateTo": "2023-12-31", "domains": []string{"database"}}},
		{"Flags", "reviewed=false&isRecurrence=false", map[string]any{"reviewed": false, "isRecurrence": false}},
		{"Verification", "verification=PRIMARY_SOURCE,UNKNOWN", map[string]any{"verification": []string{"PRIMARY_SOURCE", "UNKNOWN"}}},
		{"IDs", "ids=IL-0213,IL-0216,IL-1003", map[string]any{"ids": []string{"IL-0213", "IL-0216", "IL-1003"}}},
		{"SelectsNone", "organizations=no-such-organization", map[string]any{"organizations": []string{"no-such-organization"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, b := httpGet(t, ts.URL+"/api/v1/incidents.csv?"+c.query, nil)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
				t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			if !bytes.HasPrefix(b, []byte("\xEF\xBB\xBFid,date,")) {
				t.Fatalf("the file does not start with the BOM and the header: %q", b[:min(len(b), 40)])
			}
			if !bytes.HasSuffix(b, []byte("\r\n")) {
				t.Fatalf("lines do not end with CRLF")
			}
			records, err := csv.NewReader(bytes.NewReader(b[3:])).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(records[0], restapi.CSVColumns) {
				t.Fatalf("header %q", records[0])
			}
			want := graphqlRows(t, ts.URL, c.filter)
			got := records[1:]
			if len(got) != len(want) {
				t.Fatalf("%d rows, GraphQL %d", len(got), len(want))
			}
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("row %d:\n csv     %q\n graphql %q", i, got[i], want[i])
				}
			}
			if c.name == "Everything" {
				joined := string(b)
				for _, cell := range []string{`"'=HYPERLINK(""http://example.org"",""click"")"`, "'@SUM(A1:A2)", "\"'-1 server, \"\"quoted\"\", and a\r\nsecond line\"", "''Quoted' in its own title"} {
					if !strings.Contains(joined, cell) {
						t.Errorf("the export lacks the cell %s", cell)
					}
				}
			}
		})
	}
}

// TestExportsBadParameters: an unknown, repeated or malformed parameter is
// 400 with the REST error body naming it.
func TestExportsBadParameters(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	for _, path := range []string{"/api/v1/incidents.csv", "/feed.atom"} {
		for name, c := range map[string]struct{ query, field string }{
			"Unknown":           {"colour=red", "colour"},
			"OrderNotAFilter":   {"orderBy=DATE", "orderBy"},
			"Repeated":          {"symptoms=oom&symptoms=high-latency", "symptoms"},
			"EmptyItem":         {"symptoms=oom,,high-latency", "symptoms"},
			"Date":              {"dateFrom=2020-13-01", "dateFrom"},
			"DateEmpty":         {"dateTo=", "dateTo"},
			"UpdatedSince":      {"updatedSince=yesterday", "updatedSince"},
			"Boolean":           {"reviewed=yes", "reviewed"},
			"Verification":      {"verification=PRIMARY", "verification"},
			"ID":                {"ids=IL-0213,nope", "ids"},
			"SnakeCaseName":     {"root_causes=software-bug", "root_causes"},
			"LowerCaseSeverity": {"Severities=sev1", "Severities"},
		} {
			t.Run(strings.TrimPrefix(path, "/")+"/"+name, func(t *testing.T) {
				resp, b := httpGet(t, ts.URL+path+"?"+c.query, nil)
				var body struct {
					Error struct {
						Code  string
						Field []string
					}
				}
				if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &body) != nil || body.Error.Code != incidentlib.EINVALID ||
					!slices.Equal(body.Error.Field, []string{c.field}) || resp.Header.Get("Etag") != "" {
					t.Fatalf("%s?%s: %d %s", path, c.query, resp.StatusCode, b)
				}
			})
		}
	}
	t.Run("AtomLang", func(t *testing.T) {
		if resp, b := httpGet(t, ts.URL+"/feed.atom?lang=fr", nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
}

// TestExportsETag: the ETag names the store sequence and the normalized
// filter: If-None-Match is answered 304 without reading the store (it is
// closed by then), the same filter written otherwise has the same ETag,
// and a small body is replayed from the cache; a write changes the ETag.
func TestExportsETag(t *testing.T) {
	db := testutil.ServerStore(t, seedIncidents(t), storage.Options{})
	ts := serveStore(t, db, server.Config{}, testutil.ServerParts{})
	for _, path := range []string{"/api/v1/incidents.csv?symptoms=service-unavailable,high-latency", "/feed.atom?domains=database"} {
		t.Run(strings.Split(path, "?")[0], func(t *testing.T) {
			resp, b := httpGet(t, ts.URL+path, nil)
			etag := resp.Header.Get("Etag")
			if resp.StatusCode != http.StatusOK || etag == "" {
				t.Fatalf("%d, ETag %q: %s", resp.StatusCode, etag, b)
			}
			reordered := path
			if strings.Contains(path, "symptoms") {
				reordered = strings.Replace(path, "service-unavailable,high-latency", "high-latency,service-unavailable,high-latency", 1)
			}
			if resp, _ := httpGet(t, ts.URL+reordered, map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
				t.Fatalf("the same filter written otherwise: %d", resp.StatusCode)
			}
			if _, err := db.Incidents().UpsertIncident(context.Background(), changed(t, db), incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			resp2, _ := httpGet(t, ts.URL+path, map[string]string{"If-None-Match": etag})
			if resp2.StatusCode != http.StatusOK || resp2.Header.Get("Etag") == etag {
				t.Fatalf("after a write: %d, ETag %q", resp2.StatusCode, resp2.Header.Get("Etag"))
			}
		})
	}
	t.Run("Head", func(t *testing.T) {
		resp, err := http.Head(ts.URL + "/api/v1/incidents.csv")
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Etag") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
			t.Fatalf("%v %+v", err, resp)
		}
		resp.Body.Close()
	})
	t.Run("NotModifiedReadsNothing", func(t *testing.T) {
		const path = "/api/v1/incidents.csv?domains=database"
		resp, b := httpGet(t, ts.URL+path, nil)
		etag := resp.Header.Get("Etag")
		if err := db.Close(); err != nil { // any read fails from here on
			t.Fatal(err)
		}
		if resp, _ := httpGet(t, ts.URL+path, map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
			t.Fatalf("If-None-Match: %d", resp.StatusCode)
		}
		resp2, b2 := httpGet(t, ts.URL+path, nil)
		if resp2.StatusCode != http.StatusOK || !bytes.Equal(b, b2) {
			t.Fatalf("from the cache: %d %s", resp2.StatusCode, b2)
		}
		if resp, _ := httpGet(t, ts.URL+"/api/v1/incidents.csv?domains=network", nil); resp.StatusCode == http.StatusOK {
			t.Fatalf("a filter not cached was answered from a closed store")
		}
	})
}

// changed returns a seed incident with a new title, to write.
func changed(t *testing.T, db *storage.DB) *incidentlib.Incident {
	incs, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{"IL-0213"})
	if err != nil || incs[0] == nil {
		t.Fatal(err)
	}
	inc := *incs[0]
	inc.Title.En += fmt.Sprintf(" (%d)", time.Now().UnixNano())
	inc.Review = incidentlib.Review{}
	return &inc
}

// TestExportsRateLimited: the exports count against the client's rate
// limit; the CSV export costs the cost limit, a whole bucket.
func TestExportsRateLimited(t *testing.T) {
	ts := serveStore(t, testutil.ServerStore(t, seedIncidents(t), storage.Options{}),
		server.Config{RateLimit: gqledge.RateLimit{CostPerSecond: 0.001}}, testutil.ServerParts{})
	if resp, b := httpGet(t, ts.URL+"/api/v1/incidents.csv", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("first: %d %s", resp.StatusCode, b)
	}
	resp, b := httpGet(t, ts.URL+"/api/v1/incidents.csv", nil)
	var body struct{ Error struct{ Code string } }
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || json.Unmarshal(b, &body) != nil || body.Error.Code != gqledge.CodeRateLimited {
		t.Fatalf("second: %d %s", resp.StatusCode, b)
	}
	if resp, _ := httpGet(t, ts.URL+"/feed.atom", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the feed after the bucket was emptied: %d", resp.StatusCode)
	}
}

// The feed as a reader parses it.
type atomFeed struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string   `xml:"id"`
	Title   string   `xml:"title"`
	Updated string   `xml:"updated"`
	Author  []struct {
		Name string `xml:"name"`
	} `xml:"author"`
	Links []struct {
		Rel  string `xml:"rel,attr"`
		Href string `xml:"href,attr"`
	} `xml:"link"`
	Entries []struct {
		ID      string `xml:"id"`
		Title   string `xml:"title"`
		Updated string `xml:"updated"`
		Content string `xml:"content"`
		Links   []struct {
			Rel  string `xml:"rel,attr"`
			Href string `xml:"href,attr"`
		} `xml:"link"`
	} `xml:"entry"`
}

// TestAtomFeed: the feed parses as Atom with every required element: the
// newest 50 incidents by updated_at (as incidents ordered by UPDATED_AT
// DESC), ids tag:HOST:ID, updated in RFC 3339, links made absolute with
// the public URL (xmlText, which drops the characters XML forbids, is
// tested in restapi: validation keeps them out of the store).
func TestAtomFeed(t *testing.T) {
	incs := exportCorpus(t)
	ts := serveStore(t, testutil.ServerStore(t, incs, storage.Options{}),
		server.Config{PublicURL: "https://incidents.example.org/lib/"}, testutil.ServerParts{})
	resp, b := httpGet(t, ts.URL+"/feed.atom", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/atom+xml") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var feed atomFeed
	if err := xml.Unmarshal(b, &feed); err != nil {
		t.Fatalf("the feed does not parse: %v", err)
	}
	if feed.ID == "" || feed.Title == "" || len(feed.Author) == 0 || feed.Author[0].Name == "" {
		t.Fatalf("feed lacks id, title or author: %+v", feed)
	}
	if _, err := time.Parse(time.RFC3339, feed.Updated); err != nil {
		t.Fatalf("feed updated %q: %v", feed.Updated, err)
	}
	if len(feed.Entries) != restapi.AtomEntries {
		t.Fatalf("%d entries", len(feed.Entries))
	}
	// The same incidents as the GraphQL list by updated_at.
	const doc = `{ incidents(orderBy: {field: UPDATED_AT, direction: DESC}, first: 50) { nodes { id updatedAt } } }`
	body, _ := json.Marshal(map[string]any{"query": doc})
	gresp, err := http.Post(ts.URL+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data struct {
			Incidents struct {
				Nodes []struct{ ID, UpdatedAt string }
			}
		}
	}
	err = json.NewDecoder(gresp.Body).Decode(&list)
	gresp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for i, e := range feed.Entries {
		want := list.Data.Incidents.Nodes[i]
		if e.ID != "tag:incidents.example.org:"+want.ID {
			t.Fatalf("entry %d id %q, want the tag of %s", i, e.ID, want.ID)
		}
		u, err := time.Parse(time.RFC3339, e.Updated)
		w, _ := time.Parse(time.RFC3339, want.UpdatedAt)
		if err != nil || !u.Equal(w) {
			t.Fatalf("entry %d updated %q, incident %q", i, e.Updated, want.UpdatedAt)
		}
		if e.Title == "" || len(e.Links) != 1 || e.Links[0].Rel != "alternate" ||
			e.Links[0].Href != "https://incidents.example.org/lib/api/v1/incidents/"+want.ID {
			t.Fatalf("entry %d: %+v", i, e)
		}
		if e.Updated > newest {
			newest = e.Updated
		}
	}
	if fu, _ := time.Parse(time.RFC3339, feed.Updated); !fu.Equal(mustTime(t, newest)) {
		t.Errorf("feed updated %s, newest entry %s", feed.Updated, newest)
	}
	// A feed of one incident, by id.
	resp, b = httpGet(t, ts.URL+"/feed.atom?ids="+incs[0].ID, nil)
	feed = atomFeed{}
	if err := xml.Unmarshal(b, &feed); err != nil || len(feed.Entries) != 1 || feed.Entries[0].ID != "tag:incidents.example.org:"+incs[0].ID {
		t.Fatalf("%d: %v %s", resp.StatusCode, err, b)
	}
	if !strings.Contains(feed.ID, "ids=") {
		t.Errorf("a filtered feed has the id of the whole one: %s", feed.ID)
	}
	t.Run("HostOfTheRequest", func(t *testing.T) {
		ts := newTestServer(t, seedIncidents(t))
		_, b := httpGet(t, ts.URL+"/feed.atom?lang=ko", nil)
		var feed atomFeed
		if err := xml.Unmarshal(b, &feed); err != nil || len(feed.Entries) == 0 {
			t.Fatalf("%v %s", err, b)
		}
		u, _ := url.Parse(ts.URL)
		if e := feed.Entries[0]; !strings.HasPrefix(e.ID, "tag:"+u.Hostname()+":IL-") || !strings.HasPrefix(e.Links[0].Href, ts.URL+"/api/v1/incidents/") {
			t.Fatalf("%+v", e)
		}
	})
}

func mustTime(t *testing.T, s string) time.Time {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
