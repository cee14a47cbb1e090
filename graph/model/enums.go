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
// incidentlib.TermKinds in upper case (KindOf, TermKindOf), and only in
// upper case.
type TaxonomyKind string

func (e TaxonomyKind) IsValid() bool {
	return TermKindOf(e).IsValid() && KindOf(TermKindOf(e)) == e
}
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

// The enums TimelineEventKind, OrganizationOrderField and TokenRole are
// bound to the domain's types the same way.

// UnmarshalTimelineEventKind reads the enum TimelineEventKind.
func UnmarshalTimelineEventKind(v any) (incidentlib.EventKind, error) {
	return readEnum(v, "TimelineEventKind", incidentlib.EventKind.IsValid)
}

// MarshalTimelineEventKind writes the enum TimelineEventKind.
func MarshalTimelineEventKind(k incidentlib.EventKind) graphql.Marshaler { return writeEnum(k) }

// UnmarshalOrganizationOrderField reads the enum OrganizationOrderField,
// whose values are the domain's but SLUG (the order without orderBy).
func UnmarshalOrganizationOrderField(v any) (incidentlib.OrganizationOrderField, error) {
	return readEnum(v, "OrganizationOrderField", func(f incidentlib.OrganizationOrderField) bool {
		return f == incidentlib.OrgOrderName || f == incidentlib.OrgOrderIncidentCount || f == incidentlib.OrgOrderLatestIncident
	})
}

// MarshalOrganizationOrderField writes the enum OrganizationOrderField.
func MarshalOrganizationOrderField(f incidentlib.OrganizationOrderField) graphql.Marshaler {
	return writeEnum(f)
}

// tokenRoles pairs each value of the enum TokenRole with the role its
// tokens grant: one table, read both ways.
var tokenRoles = [...]struct {
	name string
	role incidentlib.Role
}{
	{"EDITOR", incidentlib.RoleEditor},
	{"REVIEWER", incidentlib.RoleReviewer},
	{"ADMIN", incidentlib.RoleAdmin},
}

// UnmarshalTokenRole reads the enum TokenRole as the role its tokens
// grant.
func UnmarshalTokenRole(v any) (incidentlib.Role, error) {
	role := incidentlib.RoleReader
	_, err := readEnum(v, "TokenRole", func(name string) bool {
		for _, t := range tokenRoles {
			if t.name == name {
				role = t.role
				return true
			}
		}
		return false
	})
	return role, err
}

// MarshalTokenRole writes the enum TokenRole of a token that grants r
// (EDITOR for a role not in tokenRoles).
func MarshalTokenRole(r incidentlib.Role) graphql.Marshaler {
	name := tokenRoles[0].name
	for _, t := range tokenRoles {
		if t.role == r {
			name = t.name
			break
		}
	}
	return writeEnum(name)
}

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
