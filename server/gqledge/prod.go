package gqledge

import (
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

// useProd turns suggestions off in every validation rule that makes them.
func useProd(gql *handler.Server) {
	gql.SetDisableSuggestion(true) // fields on types and scalar leafs
	gql.SetValidationRulesFn(func() *rules.Rules {
		r := rules.NewDefaultRules()
		for _, swap := range []struct {
			name string
			rule core.Rule
		}{
			{rules.KnownArgumentNamesRule.Name, rules.KnownArgumentNamesRuleWithoutSuggestions},
			{rules.KnownTypeNamesRule.Name, rules.KnownTypeNamesRuleWithoutSuggestions},
			{rules.ValuesOfCorrectTypeRule.Name, rules.ValuesOfCorrectTypeRuleWithoutSuggestions},
		} {
			r.RemoveRule(swap.name)
			r.AddRule(swap.rule.Name, swap.rule.RuleFunc)
		}
		return r
	})
}

// ---- the published schema ----

// schemaSDL returns the schema files as compiled into the executable
// schema, in name order: what `*.graphqls` held at `make generate`, with
// their descriptions.
func schemaSDL(s *ast.Schema) []byte {
	srcs := map[string]string{}
	add := func(p *ast.Position) {
		if p != nil && p.Src != nil && !p.Src.BuiltIn {
			srcs[p.Src.Name] = p.Src.Input
		}
	}
	for _, t := range s.Types {
		add(t.Position)
		for _, f := range t.Fields {
			add(f.Position)
		}
		for _, v := range t.EnumValues {
			add(v.Position)
		}
	}
	for _, d := range s.Directives {
		add(d.Position)
	}
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return path.Base(names[i]) < path.Base(names[j]) })
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "# %s\n", path.Base(n))
		b.WriteString(srcs[n])
		if !strings.HasSuffix(srcs[n], "\n") {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}

// serveSchema publishes the schema as SDL at GET /schema.graphql, in prod
// mode too, so that client tooling works without introspection.
func (g *guard) serveSchema(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(g.sdl)
}
