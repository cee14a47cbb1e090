package model

import (
	"io"

	"github.com/incidentlib/incidentlib"
)

// CitationStyle is the GraphQL enum of citation styles (citation.graphqls).
type CitationStyle string

// Citation styles.
const (
	CitationStyleBibtex  CitationStyle = "BIBTEX"
	CitationStyleCSLJSON CitationStyle = "CSL_JSON"
)

func (e CitationStyle) IsValid() bool {
	return e == CitationStyleBibtex || e == CitationStyleCSLJSON
}
func (e CitationStyle) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *CitationStyle) UnmarshalGQL(v any) error {
	return incidentlib.UnmarshalEnum(e, v, "CitationStyle", CitationStyle.IsValid)
}

// MarshalGQL writes the enum.
func (e CitationStyle) MarshalGQL(w io.Writer) { incidentlib.WriteEnum(w, string(e)) }
