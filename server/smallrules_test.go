package server_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
)

// TestTermAliasRules: an alias equal to its term's own slug is refused
// (it was accepted without a word), and term(kind:, slug:) answers an
// alias with its term, as filters resolve it (it answered null).
func TestTermAliasRules(t *testing.T) {
	s := newIDServer(t, server.Config{})
	admin := taxGQL{s, apiToken(t, s.db, "boss", incidentlib.RoleAdmin)}
	reader := taxGQL{s: s}
	var al struct{ AddTermAliases struct{ UserErrors userErrs } }
	t.Run("ErrAliasIsOwnSlug", func(t *testing.T) {
		admin.do(t, `mutation { addTermAliases(kind: SYMPTOM, slug: "high-latency", aliases: ["high-latency"]) { userErrors { code field } } }`, nil, &al)
		if ue := al.AddTermAliases.UserErrors; len(ue) != 1 || ue[0].Code != incidentlib.EINVALID || !slices.Equal(ue[0].Field, []string{"aliases", "0"}) {
			t.Fatalf("%+v", al)
		}
		var add struct{ AddTerm struct{ UserErrors userErrs } }
		admin.do(t, `mutation { addTerm(input: {kind: SYMPTOM, slug: "own-alias", label: {en: "Own"}, aliases: ["own-alias"]}) { userErrors { code field } } }`, nil, &add)
		if ue := add.AddTerm.UserErrors; len(ue) != 1 || ue[0].Code != incidentlib.EINVALID {
			t.Fatalf("%+v", add)
		}
	})
	t.Run("TermByAlias", func(t *testing.T) {
		admin.do(t, `mutation { addTermAliases(kind: SYMPTOM, slug: "high-latency", aliases: ["slowness"]) { userErrors { code field } } }`, nil, &al)
		if len(al.AddTermAliases.UserErrors) > 0 {
			t.Fatalf("%+v", al)
		}
		var tq struct{ Term *struct{ Slug string } }
		for _, slug := range []string{"slowness", "Slowness", "high-latency"} {
			reader.do(t, `query($s: String!) { term(kind: SYMPTOM, slug: $s) { slug } }`, map[string]any{"s": slug}, &tq)
			if tq.Term == nil || tq.Term.Slug != "high-latency" {
				t.Fatalf("term(slug: %q): %+v", slug, tq.Term)
			}
		}
		reader.do(t, `{ term(kind: SYMPTOM, slug: "no-such-term") { slug } }`, nil, &tq)
		if tq.Term != nil {
			t.Fatalf("%+v", tq.Term)
		}
	})
}

// TestFilterBoundsAsTheCalendarSays: updatedSince after 2262-04-11 (past
// int64 nanoseconds) matched everything and before 1677-09-21 nothing;
// dateFrom 0000-01-01 matched nothing. Each bound of years 0001-9999 is
// answered as the calendar says.
func TestFilterBoundsAsTheCalendarSays(t *testing.T) {
	incs := corpus(t, 40, 3)
	ts := apiServer(t, server.Config{}, incs)
	dated := 0
	for _, inc := range incs {
		if inc.Date != "" {
			dated++
		}
	}
	count := func(t *testing.T, f map[string]any) int {
		t.Helper()
		var out struct{ Incidents struct{ TotalCount int } }
		ts.data(t, `query($f: IncidentFilter) { incidents(filter: $f, first: 1) { totalCount } }`, map[string]any{"f": f}, &out)
		return out.Incidents.TotalCount
	}
	all := count(t, nil)
	if all != len(incs) || dated == 0 {
		t.Fatalf("%d incidents, %d dated", all, dated)
	}
	for _, c := range []struct {
		name string
		f    map[string]any
		want int
	}{
		{"UpdatedSinceYear1", map[string]any{"updatedSince": "0001-01-01T00:00:00Z"}, all},
		{"UpdatedSince1600", map[string]any{"updatedSince": "1600-06-01T00:00:00Z"}, all},
		{"UpdatedSince2300", map[string]any{"updatedSince": "2300-01-01T00:00:00Z"}, 0},
		{"UpdatedSince9999", map[string]any{"updatedSince": "9999-12-31T23:59:59Z"}, 0},
		{"DateFromYear0", map[string]any{"dateFrom": "0000-01-01"}, dated},
		{"DateFromYear1", map[string]any{"dateFrom": "0001-01-01"}, dated},
		{"DateToYear0", map[string]any{"dateTo": "0000-12-31"}, 0},
		{"DateTo9999", map[string]any{"dateTo": "9999-12-31"}, dated},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := count(t, c.f); got != c.want {
				t.Fatalf("%d, want %d", got, c.want)
			}
		})
	}
}

// TestIncidentInputTakesExplicitNulls walks IncidentInput's fields from
// the schema (introspection, so a new field is covered): every nullable
// one takes an explicit null as "not set" (recurrenceOf: null was refused
// while every other field took it).
func TestIncidentInputTakesExplicitNulls(t *testing.T) {
	s := newIDServer(t, server.Config{})
	editor := taxGQL{s, apiToken(t, s.db, "alice", incidentlib.RoleEditor)}
	var schema struct {
		Type struct {
			InputFields []struct {
				Name string
				Type struct{ Kind string }
			}
		} `json:"__type"`
	}
	editor.do(t, `{ __type(name: "IncidentInput") { inputFields { name type { kind } } } }`, nil, &schema)
	nullable := 0
	for n, f := range schema.Type.InputFields {
		if f.Type.Kind == "NON_NULL" {
			continue
		}
		nullable++
		t.Run(f.Name, func(t *testing.T) {
			in := upsertInput(fmt.Sprintf("IL-%04d", 100+n), "high-latency")
			in[f.Name] = nil
			var up upsertAns
			editor.do(t, upsertQ, map[string]any{"i": in}, &up)
			if len(up.UpsertIncident.UserErrors) > 0 || up.UpsertIncident.Incident == nil {
				t.Fatalf("%s: null: %+v", f.Name, up)
			}
		})
	}
	if nullable < 20 {
		t.Fatalf("%d nullable fields: the introspection is wrong", nullable)
	}
}
