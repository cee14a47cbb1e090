package server_test

import (
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
