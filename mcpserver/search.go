package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SearchArgs are search_incidents' arguments.
type SearchArgs struct {
	Query  string `json:"query,omitempty" jsonschema:"words to find in the incidents' English or Korean text; every word must match. Omitted: the newest incidents that match filter"`
	Filter Filter `json:"filter,omitempty"`
	Lang   Lang   `json:"lang,omitempty"`
	First  int    `json:"first,omitempty" jsonschema:"how many incidents to return, 1 to 100 (default 10)"`
}

// IncidentBrief is an incident in a list.
type IncidentBrief struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Org      string `json:"org"`
	Date     string `json:"date,omitempty" jsonschema:"YYYY-MM-DD; absent when unknown"`
	Severity string `json:"severity,omitempty" jsonschema:"the severity term's slug"`
	Summary  string `json:"summary,omitempty" jsonschema:"the summary, cut at 400 characters"`
}

// SearchHit is an incident search_incidents found.
type SearchHit struct {
	Incident   IncidentBrief `json:"incident"`
	Score      float64       `json:"score,omitempty" jsonschema:"relevance, higher is better; comparable within one search only"`
	Highlights []string      `json:"highlights,omitempty" jsonschema:"where the incident matched: FIELD (LANG): snippet with each match in <mark></mark>"`
}

// SearchResult is search_incidents' structured content.
type SearchResult struct {
	TotalCount  int         `json:"totalCount" jsonschema:"how many incidents match, of which the first are returned"`
	Incidents   []SearchHit `json:"incidents"`
	Suggestions []string    `json:"suggestions,omitempty" jsonschema:"corrected queries when nothing matched"`
}

// briefFields are the fields of an IncidentBrief, in lang.
const briefFields = `fragment Brief on Incident { id title(lang: $lang) org date summary(lang: $lang) severity { slug } }`

// gqlBrief is an incident as briefFields reads it.
type gqlBrief struct {
	ID       string
	Title    *string
	Org      string
	Date     *string
	Summary  *string
	Severity *struct{ Slug string }
}

func (b gqlBrief) brief() IncidentBrief {
	out := IncidentBrief{ID: b.ID, Title: deref(b.Title), Org: b.Org, Date: deref(b.Date), Summary: cut(deref(b.Summary), 400)}
	if b.Severity != nil {
		out.Severity = b.Severity.Slug
	}
	return out
}

const searchQuery = `query ($query: String!, $filter: IncidentFilter, $lang: Lang, $first: Int) {
  search(query: $query, filter: $filter, lang: $lang, first: $first) {
    totalCount suggestions
    edges { score highlights { field lang snippet } node { ...Brief } }
  }
} ` + briefFields

const listQuery = `query ($filter: IncidentFilter, $lang: Lang, $first: Int) {
  incidents(filter: $filter, first: $first) { totalCount nodes { ...Brief } }
} ` + briefFields

func (t tools) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchArgs) (*mcp.CallToolResult, SearchResult, error) {
	first := in.First
	if first == 0 {
		first = 10
	}
	vars := map[string]any{"filter": filterVar(in.Filter), "lang": in.Lang.graphQL(), "first": first}
	var out SearchResult
	if strings.TrimSpace(in.Query) == "" {
		d, err := query[struct {
			Incidents struct {
				TotalCount int
				Nodes      []gqlBrief
			}
		}](ctx, t.exec, listQuery, vars)
		if err != nil {
			return nil, out, toolError(err)
		}
		out.TotalCount = d.Incidents.TotalCount
		for _, n := range d.Incidents.Nodes {
			out.Incidents = append(out.Incidents, SearchHit{Incident: n.brief()})
		}
	} else {
		vars["query"] = in.Query
		d, err := query[struct {
			Search struct {
				TotalCount  int
				Suggestions []string
				Edges       []struct {
					Score      float64
					Highlights []struct {
						Field   string
						Lang    *string
						Snippet string
					}
					Node gqlBrief
				}
			}
		}](ctx, t.exec, searchQuery, vars)
		if err != nil {
			return nil, out, toolError(err)
		}
		out.TotalCount, out.Suggestions = d.Search.TotalCount, d.Search.Suggestions
		for _, e := range d.Search.Edges {
			h := SearchHit{Incident: e.Node.brief(), Score: e.Score}
			for _, hl := range e.Highlights {
				where := hl.Field
				if hl.Lang != nil {
					where += " (" + *hl.Lang + ")"
				}
				h.Highlights = append(h.Highlights, where+": "+hl.Snippet)
			}
			out.Incidents = append(out.Incidents, h)
		}
	}
	if out.Incidents == nil {
		out.Incidents = []SearchHit{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d incidents match", out.TotalCount)
	if len(out.Incidents) < out.TotalCount {
		fmt.Fprintf(&b, "; the first %d", len(out.Incidents))
	}
	b.WriteString(".\n\n")
	for _, h := range out.Incidents {
		writeBrief(&b, h.Incident)
		for _, hl := range h.Highlights {
			fmt.Fprintf(&b, "  - %s\n", hl)
		}
	}
	if len(out.Suggestions) > 0 {
		fmt.Fprintf(&b, "\nNothing matched; try: %s\n", strings.Join(out.Suggestions, "; "))
	}
	return text(b.String()), out, nil
}

// writeBrief writes an incident as a Markdown list item.
func writeBrief(b *strings.Builder, i IncidentBrief) {
	fmt.Fprintf(b, "- **%s** %s — %s", i.ID, i.Title, i.Org)
	if i.Date != "" {
		fmt.Fprintf(b, ", %s", i.Date)
	}
	if i.Severity != "" {
		fmt.Fprintf(b, " (severity %s)", i.Severity)
	}
	b.WriteString("\n")
	if i.Summary != "" {
		fmt.Fprintf(b, "  %s\n", i.Summary)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// cut is s cut to at most n characters, with … where it was cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n])) + "…"
}
