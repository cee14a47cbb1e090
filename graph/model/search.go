package model

import (
	"io"

	"github.com/incidentlib/incidentlib"
)

// IncidentSearchConnection is a page of search results with the search it
// came from, to compute its facets and years on demand.
type IncidentSearchConnection struct {
	Edges      []*IncidentSearchEdge
	Nodes      []*Incident
	PageInfo   *PageInfo
	TotalCount int
	Query      incidentlib.SearchQuery
	// Suggestions are the search's corrected queries (SearchPage).
	Suggestions []string
}

// IncidentSearchEdge is one incident found by a search.
type IncidentSearchEdge struct {
	Cursor     string
	Node       *Incident
	Score      float64
	Highlights []*Highlight
}

// Highlight is a snippet of a field around its matches.
type Highlight struct {
	Field   SearchField
	Lang    *Lang
	Snippet string
	Via     MatchedVia
}

// NewHighlight converts a domain highlight.
func NewHighlight(h incidentlib.Highlight) *Highlight {
	out := &Highlight{Field: searchFields[h.Field], Snippet: h.Snippet, Via: MatchedViaQuery}
	if h.Translated {
		out.Via = MatchedViaTranslation
	}
	if h.Lang != "" {
		l := LangEn
		if h.Lang == incidentlib.LangKo {
			l = LangKo
		}
		out.Lang = &l
	}
	return out
}

// SearchField is the GraphQL enum of the fields a search looks in.
type SearchField string

// searchFields maps the domain's field names (search.Field) to the enum's
// values.
var searchFields = map[string]SearchField{
	"title": "TITLE", "summary": "SUMMARY", "lessons": "LESSONS", "trigger": "TRIGGER",
	"detection": "DETECTION", "symptomsText": "SYMPTOMS_TEXT", "org": "ORG",
}

func (e SearchField) IsValid() bool {
	for _, f := range searchFields {
		if f == e {
			return true
		}
	}
	return false
}

func (e SearchField) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *SearchField) UnmarshalGQL(v any) error {
	return incidentlib.UnmarshalEnum(e, v, "SearchField", SearchField.IsValid)
}

// MarshalGQL writes the enum.
func (e SearchField) MarshalGQL(w io.Writer) { incidentlib.WriteEnum(w, string(e)) }
