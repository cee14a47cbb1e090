package gqledge

import (
	"bytes"
	"net/http"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
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

// SchemaSDL prints the executable schema as one SDL document: every
// type with its extensions merged in (no `extend`, which relay-compiler
// and other tools refuse), sorted by name, with descriptions and the
// schema's own directives; the built-in scalars and directives that every
// GraphQL server has are left out, as the specification's printers do.
func SchemaSDL(s *ast.Schema) []byte {
	var b bytes.Buffer
	formatter.NewFormatter(&b, formatter.WithIndent("  ")).FormatSchema(s)
	// A blank line after each definition's closing brace, for readers.
	return bytes.ReplaceAll(b.Bytes(), []byte("\n}\n"), []byte("\n}\n\n"))
}

// serveSchema publishes the schema as SDL at GET /schema.graphql, in prod
// mode too, so that client tooling works without introspection.
func (g *guard) serveSchema(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(g.sdl)
}
