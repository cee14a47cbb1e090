package server_test

import (
	"slices"
	"strings"
	"testing"
)

// An enum value the schema does not have is refused as the client's
// error, never INTERNAL: written in the document, GraphQL validation
// refuses it; in a variable, validation lets a value through that differs
// from one of the schema's only in case (gqlparser compares enum names
// case-insensitively there), and the enum's UnmarshalGQL, which every
// enum's goes through (incidentlib.UnmarshalEnum), refuses it as INVALID
// with its path, on FastReads' path (lang) as on gqlgen's.
func TestEnumValuesNotInTheSchemaAreInvalid(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	const langQ = `query($l: Lang) { incidents(first: 2) { nodes { title(lang: $l) } } }`
	var first struct {
		Incidents struct{ Nodes []struct{ ID string } }
	}
	ts.data(t, `{ incidents(first: 1) { nodes { id } } }`, nil, &first)
	langOneQ := `query($l: Lang) { incident(id: "` + first.Incidents.Nodes[0].ID + `") { title(lang: $l) } }`
	const incidentsQ = `query($o: IncidentOrder) { incidents(first: 100, orderBy: $o) { nodes { id } } }`
	const orgsQ = `query($o: OrganizationOrder) { organizations(first: 5, orderBy: $o) { nodes { slug } } }`
	for _, c := range []struct {
		name, query string
		order       map[string]any
		want        string
	}{
		{"IncidentField", incidentsQ, map[string]any{"field": "BOGUS", "direction": "ASC"}, "BOGUS is not a valid IncidentOrderField"},
		{"IncidentFieldCase", incidentsQ, map[string]any{"field": "date", "direction": "ASC"}, "date is not a valid IncidentOrderField"},
		{"IncidentDirection", incidentsQ, map[string]any{"field": "DATE", "direction": "SIDEWAYS"}, "SIDEWAYS is not a valid OrderDirection"},
		{"IncidentFieldNotString", incidentsQ, map[string]any{"field": 7, "direction": "ASC"}, "IncidentOrderField"},
		{"IncidentDirectionCase", incidentsQ, map[string]any{"field": "DATE", "direction": "asc"}, "asc is not a valid OrderDirection"},
		{"OrganizationDirection", orgsQ, map[string]any{"field": "NAME", "direction": "UP"}, "UP is not a valid OrderDirection"},
		{"OrganizationDirectionCase", orgsQ, map[string]any{"field": "NAME", "direction": "desc"}, "desc is not a valid OrderDirection"},
	} {
		t.Run("Variable"+c.name, func(t *testing.T) {
			r := ts.query(t, c.query, map[string]any{"o": c.order})
			if len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, c.want) || string(r.Data) != "" && string(r.Data) != "null" {
				t.Fatalf("errors %+v data %s, want a refusal saying %q and no data", r.Errors, r.Data, c.want)
			}
			if code := r.code(); code == "INTERNAL" || code == "" {
				t.Fatalf("code %q for a client's value: %+v", code, r.Errors)
			}
		})
	}
	for name, q := range map[string]string{"LangFastReads": langQ, "LangResolver": langOneQ} {
		t.Run(name, func(t *testing.T) {
			r := ts.query(t, q, map[string]any{"l": "en"})
			if len(r.Errors) == 0 || r.code() != "INVALID" || !strings.Contains(r.Errors[0].Message, "en is not a valid Lang") {
				t.Fatalf("lang en: errors %+v, want INVALID, en is not a valid Lang", r.Errors)
			}
			if r := ts.query(t, q, map[string]any{"l": "EN"}); len(r.Errors) != 0 {
				t.Fatalf("lang EN: %+v", r.Errors)
			}
		})
	}
	for name, doc := range map[string]string{
		"LiteralField":     `{ incidents(orderBy: {field: BOGUS, direction: ASC}) { nodes { id } } }`,
		"LiteralDirection": `{ incidents(orderBy: {field: ID, direction: UP}) { nodes { id } } }`,
	} {
		t.Run(name, func(t *testing.T) {
			if r := ts.query(t, doc, nil); len(r.Errors) == 0 || r.code() != "GRAPHQL_VALIDATION_FAILED" {
				t.Fatalf("errors %+v, want GRAPHQL_VALIDATION_FAILED", r.Errors)
			}
		})
	}
	t.Run("EveryValueOrders", func(t *testing.T) {
		ids := func(field, dir string) []string {
			var out struct {
				Incidents struct{ Nodes []struct{ ID string } }
			}
			ts.data(t, incidentsQ, map[string]any{"o": map[string]any{"field": field, "direction": dir}}, &out)
			s := make([]string, len(out.Incidents.Nodes))
			for i, n := range out.Incidents.Nodes {
				s[i] = n.ID
			}
			return s
		}
		asc, desc := ids("ID", "ASC"), ids("ID", "DESC")
		if len(asc) < 2 || !slices.IsSorted(asc) {
			t.Fatalf("ID ASC: %v", asc)
		}
		slices.Reverse(desc)
		if !slices.Equal(asc, desc) {
			t.Fatalf("ID DESC is not ID ASC reversed: %v", desc)
		}
		for _, field := range []string{"DATE", "UPDATED_AT"} {
			if got := ids(field, "ASC"); len(got) != len(asc) {
				t.Fatalf("%s ASC: %d incidents, want %d", field, len(got), len(asc))
			}
		}
	})
}
