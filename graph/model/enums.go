package model

import (
	"io"

	"github.com/99designs/gqlgen/graphql"

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

// The order enums IncidentOrderField and OrderDirection are the domain's
// incidentlib.OrderField and incidentlib.Direction (gqlgen.yml binds them
// to these functions): one list of values, the domain's, read through the
// one incidentlib.UnmarshalEnum as every enum is.

// UnmarshalIncidentOrderField reads the enum IncidentOrderField.
func UnmarshalIncidentOrderField(v any) (incidentlib.OrderField, error) {
	return readEnum(v, "IncidentOrderField", incidentlib.OrderField.IsValid)
}

// MarshalIncidentOrderField writes the enum IncidentOrderField.
func MarshalIncidentOrderField(f incidentlib.OrderField) graphql.Marshaler { return writeEnum(f) }

// UnmarshalOrderDirection reads the enum OrderDirection.
func UnmarshalOrderDirection(v any) (incidentlib.Direction, error) {
	return readEnum(v, "OrderDirection", incidentlib.Direction.IsValid)
}

// MarshalOrderDirection writes the enum OrderDirection.
func MarshalOrderDirection(d incidentlib.Direction) graphql.Marshaler { return writeEnum(d) }

// readEnum and writeEnum are the Unmarshal and Marshal functions of an
// enum bound to a domain type.
func readEnum[T ~string](v any, name string, valid func(T) bool) (T, error) {
	var e T
	err := incidentlib.UnmarshalEnum(&e, v, name, valid)
	return e, err
}

func writeEnum[T ~string](e T) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { incidentlib.WriteEnum(w, string(e)) })
}

// PageInfo is a Relay connection's page information.
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
	StartCursor     *string
	EndCursor       *string
}

// IncidentOrder is the input that orders incidents.
type IncidentOrder struct {
	Field     incidentlib.OrderField
	Direction incidentlib.Direction
}
