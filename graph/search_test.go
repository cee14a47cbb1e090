package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// searchServer is the real handler over a real store and search index
// holding the seed incidents.
type searchServer struct {
	db  *storage.DB
	idx *search.Index
	url string
}

func newSearchServer(tb testing.TB, withIndex bool) *searchServer {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	db, err := storage.Open(filepath.Join(dir, "test.db"), storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	incs, err := seeds.Incidents()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		tb.Fatal(err)
	}
	ss := &searchServer{db: db}
	var parts testutil.ServerParts
	if withIndex {
		ss.idx, err = search.Open(ctx, db.Incidents(), filepath.Join(dir, "test.db.search"), search.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { ss.idx.Close() })
		parts.Search = ss.idx
	}
	srv, err := testutil.ServerOn(db, server.Config{}, parts)
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	ss.url = hs.URL + "/graphql"
	return ss
}

type searchResponse struct {
	Data   json.RawMessage
	Errors []struct {
		Message    string
		Extensions map[string]any
	}
}

func (ss *searchServer) post(tb testing.TB, query string, vars map[string]any) *searchResponse {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	res, err := http.Post(ss.url, "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var out searchResponse
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		tb.Fatal(err)
	}
	return &out
}

func (r *searchResponse) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

const searchQuery = `query($q: String!, $f: IncidentFilter, $lang: Lang, $first: Int, $after: String) {
  search(query: $q, filter: $f, lang: $lang, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    nodes { id }
    edges { cursor score node { id organization { slug } } highlights { field lang snippet } }
    facets(kinds: [SEVERITY]) { kind counts { term { slug } count } }
    years { year count }
  }
}`

type searchData struct {
	Search struct {
		TotalCount int
		PageInfo   struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
		Nodes []struct{ ID string }
		Edges []struct {
			Cursor string
			Score  float64
			Node   struct {
				ID           string
				Organization struct{ Slug string }
			}
			Highlights []struct {
				Field   string
				Lang    *string
				Snippet string
			}
		}
		Facets []struct {
			Kind   string
			Counts []struct {
				Term  struct{ Slug string }
				Count int
			}
		}
		Years []struct{ Year, Count int }
	}
}

func (ss *searchServer) search(tb testing.TB, vars map[string]any) searchData {
	tb.Helper()
	r := ss.post(tb, searchQuery, vars)
	if len(r.Errors) > 0 {
		tb.Fatalf("search %v: %+v", vars, r.Errors)
	}
	var d searchData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		tb.Fatal(err)
	}
	return d
}

func TestSearchOverGraphQL(t *testing.T) {
	ss := newSearchServer(t, true)
	t.Run("HitsWithHighlights", func(t *testing.T) {
		d := ss.search(t, map[string]any{"q": "클러스터 consul", "lang": "KO"})
		s := d.Search
		if len(s.Edges) == 0 || s.Edges[0].Node.ID != "IL-0213" || s.Nodes[0].ID != "IL-0213" {
			t.Fatalf("edges %+v", s.Edges)
		}
		e := s.Edges[0]
		if e.Score <= 0 || e.Node.Organization.Slug != "roblox" {
			t.Errorf("edge %+v", e)
		}
		if len(e.Highlights) == 0 || e.Highlights[0].Field != "TITLE" || e.Highlights[0].Lang == nil || *e.Highlights[0].Lang != "KO" {
			t.Fatalf("highlights %+v", e.Highlights)
		}
		if !strings.HasPrefix(e.Highlights[0].Snippet, "<mark>Consul</mark> <mark>클러스터</mark>의") {
			t.Errorf("title snippet %q", e.Highlights[0].Snippet)
		}
	})
	t.Run("TotalCountFacetsAndYearsOfTheResult", func(t *testing.T) {
		s := ss.search(t, map[string]any{"q": "redis", "first": 1}).Search
		all := ss.search(t, map[string]any{"q": "redis", "first": 100}).Search
		if s.TotalCount != len(all.Edges) || s.TotalCount < 2 {
			t.Fatalf("totalCount %d, %d hits", s.TotalCount, len(all.Edges))
		}
		sum := 0
		for _, c := range s.Facets[0].Counts {
			sum += c.Count
		}
		if s.Facets[0].Kind != "SEVERITY" || sum != s.TotalCount {
			t.Errorf("severity facet %+v sums to %d, want %d", s.Facets, sum, s.TotalCount)
		}
		years := 0
		for _, y := range s.Years {
			years += y.Count
		}
		if years > s.TotalCount {
			t.Errorf("years %+v count more than %d", s.Years, s.TotalCount)
		}
		// IL-0213 happened in 2021.
		s = ss.search(t, map[string]any{"q": `"freelist" roblox`}).Search
		if s.TotalCount != 1 || len(s.Years) != 1 || s.Years[0].Year != 2021 || s.Years[0].Count != 1 {
			t.Errorf("years of IL-0213 alone: %+v (totalCount %d)", s.Years, s.TotalCount)
		}
	})
	t.Run("FilterCombines", func(t *testing.T) {
		s := ss.search(t, map[string]any{"q": "redis", "f": map[string]any{"organizations": []string{"unnamed-veltrix-customer"}}}).Search
		if len(s.Edges) == 0 {
			t.Fatal("no hits")
		}
		for _, e := range s.Edges {
			if e.Node.Organization.Slug != "unnamed-veltrix-customer" {
				t.Errorf("%s of %s passed the filter", e.Node.ID, e.Node.Organization.Slug)
			}
		}
	})
	t.Run("Pages", func(t *testing.T) {
		all := ss.search(t, map[string]any{"q": "redis", "first": 100}).Search
		var walked []string
		vars := map[string]any{"q": "redis", "first": 1}
		for {
			s := ss.search(t, vars).Search
			for _, e := range s.Edges {
				walked = append(walked, e.Node.ID)
			}
			if !s.PageInfo.HasNextPage {
				break
			}
			vars["after"] = *s.PageInfo.EndCursor
		}
		var want []string
		for _, e := range all.Edges {
			want = append(want, e.Node.ID)
		}
		if !slices.Equal(walked, want) {
			t.Errorf("walked %v, want %v", walked, want)
		}
	})
	t.Run("WriteThenSearch", func(t *testing.T) {
		if s := ss.search(t, map[string]any{"q": "zookeeper"}).Search; s.TotalCount != 0 {
			t.Fatalf("found %d before the write", s.TotalCount)
		}
		rec := &incidentlib.Incident{ID: "IL-9000", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "ZooKeeper sessions expired"}}
		if _, err := ss.db.Incidents().ImportIncidents(context.Background(), []*incidentlib.Incident{rec}, incidentlib.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		if s := ss.search(t, map[string]any{"q": "zookeeper"}).Search; len(s.Edges) != 1 || s.Edges[0].Node.ID != "IL-9000" {
			t.Errorf("after the write: %+v", s.Edges)
		}
	})
	t.Run("OnlyExclusionsEverythingBut", func(t *testing.T) {
		all := ss.search(t, map[string]any{"q": "-zzzqx"}).Search.TotalCount
		consul := ss.search(t, map[string]any{"q": "consul", "first": 100}).Search
		got := ss.search(t, map[string]any{"q": "-consul", "first": 100}).Search
		if all == 0 || consul.TotalCount == 0 || got.TotalCount != all-consul.TotalCount {
			t.Fatalf("-consul finds %d, consul %d, of %d", got.TotalCount, consul.TotalCount, all)
		}
		for _, e := range got.Edges {
			for _, c := range consul.Edges {
				if e.Node.ID == c.Node.ID {
					t.Errorf("-consul finds %s", e.Node.ID)
				}
			}
		}
	})
	codes := map[string]struct {
		vars map[string]any
		code string
	}{
		"ErrBadQueryUnbalancedQuote": {map[string]any{"q": `"consul`}, incidentlib.EBADQUERY},
		"ErrBadQueryEmpty":           {map[string]any{"q": ""}, incidentlib.EBADQUERY},
		"ErrBadQueryUnknownPrefix":   {map[string]any{"q": "author:someone"}, incidentlib.EBADQUERY},
		"ErrCursorMalformed":         {map[string]any{"q": "consul", "after": "%%%"}, incidentlib.EBADCURSOR},
		"ErrFirstTooLarge":           {map[string]any{"q": "consul", "first": 101}, incidentlib.EINVALID},
		"ErrBadFilter":               {map[string]any{"q": "consul", "f": map[string]any{"dateFrom": "yesterday"}}, incidentlib.EINVALID},
	}
	for name, c := range codes {
		t.Run(name, func(t *testing.T) {
			if got := ss.post(t, searchQuery, c.vars).code(); got != c.code {
				t.Errorf("code %q, want %s", got, c.code)
			}
		})
	}
}

func TestSearchWithoutIndex(t *testing.T) {
	ss := newSearchServer(t, false)
	if got := ss.post(t, searchQuery, map[string]any{"q": "consul"}).code(); got != incidentlib.EUNAVAILABLE {
		t.Errorf("code %q, want %s", got, incidentlib.EUNAVAILABLE)
	}
}
