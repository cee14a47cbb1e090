package model

import (
	"fmt"
	"io"
	"strconv"
)

// enum implements gqlgen's marshaling for a string enum with known values.
func unmarshalEnum[T ~string](v any, name string, valid func(T) bool) (T, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string", name)
	}
	if !valid(T(s)) {
		return "", fmt.Errorf("%s is not a valid %s", s, name)
	}
	return T(s), nil
}

func writeEnum(w io.Writer, s string) { _, _ = io.WriteString(w, strconv.Quote(s)) }

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
func (e *Lang) UnmarshalGQL(v any) (err error) {
	*e, err = unmarshalEnum(v, "Lang", Lang.IsValid)
	return err
}

// MarshalGQL writes the enum.
func (e Lang) MarshalGQL(w io.Writer) { writeEnum(w, string(e)) }

// TaxonomyKind is the GraphQL enum of term kinds.
type TaxonomyKind string

// Term kinds.
const (
	TaxonomyKindDomain       TaxonomyKind = "DOMAIN"
	TaxonomyKindSymptom      TaxonomyKind = "SYMPTOM"
	TaxonomyKindComponent    TaxonomyKind = "COMPONENT"
	TaxonomyKindRootCause    TaxonomyKind = "ROOT_CAUSE"
	TaxonomyKindContributing TaxonomyKind = "CONTRIBUTING"
	TaxonomyKindSeverity     TaxonomyKind = "SEVERITY"
)

func (e TaxonomyKind) IsValid() bool  { return TermKindOf(e).IsValid() }
func (e TaxonomyKind) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *TaxonomyKind) UnmarshalGQL(v any) (err error) {
	*e, err = unmarshalEnum(v, "TaxonomyKind", TaxonomyKind.IsValid)
	return err
}

// MarshalGQL writes the enum.
func (e TaxonomyKind) MarshalGQL(w io.Writer) { writeEnum(w, string(e)) }

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
func (e *IncidentOrderField) UnmarshalGQL(v any) (err error) {
	*e, err = unmarshalEnum(v, "IncidentOrderField", IncidentOrderField.IsValid)
	return err
}

// MarshalGQL writes the enum.
func (e IncidentOrderField) MarshalGQL(w io.Writer) { writeEnum(w, string(e)) }

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
func (e *OrderDirection) UnmarshalGQL(v any) (err error) {
	*e, err = unmarshalEnum(v, "OrderDirection", OrderDirection.IsValid)
	return err
}

// MarshalGQL writes the enum.
func (e OrderDirection) MarshalGQL(w io.Writer) { writeEnum(w, string(e)) }

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
