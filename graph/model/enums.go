package model

import (
	"io"

	"github.com/incidentlib/incidentlib"
)

// Lang is the GraphQL enum of languages.
type Lang string

// Languages.
const (
	LangEn Lang = "EN"
	LangKo Lang = "KO"
)

func (e Lang) IsValid() bool  { return e == LangEn || e == LangKo }
func (e Lang) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *Lang) UnmarshalGQL(v any) error {
	return incidentlib.UnmarshalEnum(e, v, "Lang", Lang.IsValid)
}

// MarshalGQL writes the enum.
func (e Lang) MarshalGQL(w io.Writer) { incidentlib.WriteEnum(w, string(e)) }

// TaxonomyKind is the GraphQL enum of term kinds: its values are
// incidentlib.TermKinds in upper case (KindOf, TermKindOf).
type TaxonomyKind string

func (e TaxonomyKind) IsValid() bool  { return TermKindOf(e).IsValid() }
func (e TaxonomyKind) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *TaxonomyKind) UnmarshalGQL(v any) error {
	return incidentlib.UnmarshalEnum(e, v, "TaxonomyKind", TaxonomyKind.IsValid)
}

// MarshalGQL writes the enum.
func (e TaxonomyKind) MarshalGQL(w io.Writer) { incidentlib.WriteEnum(w, string(e)) }

// IncidentOrderField is the GraphQL enum of order fields.
type IncidentOrderField string

// Order fields.
const (
	IncidentOrderFieldDate      IncidentOrderField = "DATE"
	IncidentOrderFieldUpdatedAt IncidentOrderField = "UPDATED_AT"
	IncidentOrderFieldID        IncidentOrderField = "ID"
)

func (e IncidentOrderField) IsValid() bool {
	return e == IncidentOrderFieldDate || e == IncidentOrderFieldUpdatedAt || e == IncidentOrderFieldID
}
func (e IncidentOrderField) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *IncidentOrderField) UnmarshalGQL(v any) error {
	return incidentlib.UnmarshalEnum(e, v, "IncidentOrderField", IncidentOrderField.IsValid)
}

// MarshalGQL writes the enum.
func (e IncidentOrderField) MarshalGQL(w io.Writer) { incidentlib.WriteEnum(w, string(e)) }

// OrderDirection is the GraphQL enum of directions.
type OrderDirection string

// Directions.
const (
	OrderDirectionAsc  OrderDirection = "ASC"
	OrderDirectionDesc OrderDirection = "DESC"
)

func (e OrderDirection) IsValid() bool  { return e == OrderDirectionAsc || e == OrderDirectionDesc }
func (e OrderDirection) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *OrderDirection) UnmarshalGQL(v any) error {
	return incidentlib.UnmarshalEnum(e, v, "OrderDirection", OrderDirection.IsValid)
}

// MarshalGQL writes the enum.
func (e OrderDirection) MarshalGQL(w io.Writer) { incidentlib.WriteEnum(w, string(e)) }

// PageInfo is a Relay connection's page information.
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
	StartCursor     *string
	EndCursor       *string
}

// IncidentOrder is the input that orders incidents.
type IncidentOrder struct {
	Field     IncidentOrderField
	Direction OrderDirection
}
