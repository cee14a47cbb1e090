package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestSearchSpellingsThroughTheHandler: over the seeds, through the real
// handler (FastReads and gqlgen alike), the spellings of one compound find
// the same incidents, Korean nouns are found with or without the space
// between them, and a search one letter off gets suggestions.
func TestSearchSpellingsThroughTheHandler(t *testing.T) {
	p := newFastPair(t, seedIncidents(t))
	type answer struct {
		Data struct {
			Search struct {
				TotalCount  int
				Nodes       []struct{ ID string }
				Suggestions []string
			}
		}
		Errors []json.RawMessage
	}
	search := func(t *testing.T, q string) answer {
		t.Helper()
		const doc = `query($q: String!) { search(query: $q, first: 100) { totalCount nodes { id } suggestions } }`
		b := p.compare(t, doc, map[string]any{"q": q}, "")
		var a answer
		if err := json.Unmarshal(b[strings.IndexByte(string(b), ' ')+1:], &a); err != nil || len(a.Errors) > 0 {
			t.Fatalf("%q: %s", q, b)
		}
		return a
	}
	ids := func(a answer) []string {
		var out []string
		for _, n := range a.Data.Search.Nodes {
			out = append(out, n.ID)
		}
		slices.Sort(out)
		return out
	}
	// IL-0216 spells it keepAlive, IL-0217 keep-alive.
	keep := []string{"IL-0216", "IL-0217"}
	for _, q := range []string{"keep-alive", "keepalive", "KeepAlive", `"keep alive"`} {
		if got := ids(search(t, q)); !slices.Equal(got, keep) {
			t.Errorf("%q found %v, want %v", q, got, keep)
		}
	}
	// IL-0217 says 커넥션 풀.
	for _, q := range []string{"커넥션풀", "커넥션 풀", `"커넥션 풀"`} {
		if got := ids(search(t, q)); !slices.Contains(got, "IL-0217") {
			t.Errorf("%q found %v, want IL-0217 among them", q, got)
		}
	}
	a := search(t, "conzul")
	if a.Data.Search.TotalCount != 0 || !slices.Equal(a.Data.Search.Suggestions, []string{"consul"}) {
		t.Errorf("conzul: %d found, suggestions %q", a.Data.Search.TotalCount, a.Data.Search.Suggestions)
	}
	if a := search(t, "conzul leeder"); !slices.Equal(a.Data.Search.Suggestions[:1], []string{"consul leader"}) {
		t.Errorf("conzul leeder: suggestions %q", a.Data.Search.Suggestions)
	}
	if a := search(t, "consul"); a.Data.Search.TotalCount == 0 || a.Data.Search.Suggestions == nil || len(a.Data.Search.Suggestions) != 0 {
		t.Errorf("consul: %d found, suggestions %q", a.Data.Search.TotalCount, a.Data.Search.Suggestions)
	}
}
