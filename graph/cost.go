package graph

import (
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Cost is the cost of op, the figure the edge holds to --max-cost:
// gqlgen's complexity walk (complexity.Calculate) over the per-field costs
// of Complexity, with one difference. A connection's items are priced per
// item and the rest of its page once: the functions of Complexity for a
// field returning a connection (a type named ...Connection) multiply by
// the page size only what its nodes and edges select, and its other
// fields (totalCount, pageInfo, facets, years, suggestions), computed once
// per page, are added as they are. gqlgen's walk multiplies all of them
// by the page size, so a page of 100 paid its facets a hundred times
// (docs/limits.md, "Cost").
func Cost(ctx context.Context, es graphql.ExecutableSchema, op *ast.OperationDefinition, vars map[string]any) int {
	w := costWalker{es: es, schema: es.Schema(), vars: vars}
	return w.selectionSet(ctx, op.SelectionSet)
}

type costWalker struct {
	es     graphql.ExecutableSchema
	schema *ast.Schema
	vars   map[string]any
}

func (w costWalker) selectionSet(ctx context.Context, set ast.SelectionSet) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			total = costAdd(total, w.field(ctx, s))
		case *ast.FragmentSpread:
			total = costAdd(total, w.selectionSet(ctx, s.Definition.SelectionSet))
		case *ast.InlineFragment:
			total = costAdd(total, w.selectionSet(ctx, s.SelectionSet))
		}
	}
	return total
}

// field is the cost of one field and what it selects.
func (w costWalker) field(ctx context.Context, f *ast.Field) int {
	def := w.schema.Types[f.Definition.Type.Name()]
	if def.Name == "__Schema" {
		return 0
	}
	perItem, perPage := 0, 0
	switch def.Kind {
	case ast.Object, ast.Interface, ast.Union:
		if isConnection(def) {
			perItem, perPage = w.connection(ctx, f.SelectionSet)
		} else {
			perItem = w.selectionSet(ctx, f.SelectionSet)
		}
	}
	args := f.ArgumentMap(w.vars)
	if f.ObjectDefinition.Kind == ast.Interface {
		// An interface's field costs what its dearest implementation's does.
		most := 0
		for _, t := range w.schema.GetPossibleTypes(f.ObjectDefinition) {
			most = max(most, w.fieldCost(ctx, t, def.Kind, f.Name, perItem, args))
		}
		return costAdd(most, perPage)
	}
	return costAdd(w.fieldCost(ctx, f.ObjectDefinition, def.Kind, f.Name, perItem, args), perPage)
}

// connection splits a connection's selection into what each item
// selects (nodes, edges) and what the page selects once.
func (w costWalker) connection(ctx context.Context, set ast.SelectionSet) (perItem, perPage int) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			c := w.field(ctx, s)
			if s.Name == "nodes" || s.Name == "edges" {
				perItem = costAdd(perItem, c)
			} else {
				perPage = costAdd(perPage, c)
			}
		case *ast.FragmentSpread:
			i, p := w.connection(ctx, s.Definition.SelectionSet)
			perItem, perPage = costAdd(perItem, i), costAdd(perPage, p)
		case *ast.InlineFragment:
			i, p := w.connection(ctx, s.SelectionSet)
			perItem, perPage = costAdd(perItem, i), costAdd(perPage, p)
		}
	}
	return perItem, perPage
}

// fieldCost is the field's function of Complexity, or gqlgen's default:
// 1 plus what it selects.
func (w costWalker) fieldCost(ctx context.Context, obj *ast.Definition, kind ast.DefinitionKind, field string, child int, args map[string]any) int {
	if c, ok := w.es.Complexity(ctx, obj.Name, field, child, args); ok && c >= 1 {
		return c
	}
	return costAdd(1, child)
}

// isConnection says whether def is a connection type: its name ends in
// Connection (IncidentConnection, IncidentSearchConnection, ...).
func isConnection(def *ast.Definition) bool {
	return def.Kind == ast.Object && strings.HasSuffix(def.Name, "Connection")
}
