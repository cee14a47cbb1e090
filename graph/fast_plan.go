package graph

import (
	"slices"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/graph/model"
)

// A plan is a selection set collected for one object type: its fields in
// response order with their arguments parsed, made once per selection set
// whatever the number of objects, and kept across requests unless a
// variable can change it. A plan is not changed once made.
type plan struct {
	sel    ast.SelectionSet // what it was made from
	fields []pfield
}

type pfield struct {
	graphql.CollectedField
	index int            // its position in the plan
	key   string         // its response key, quoted, with the colon
	lang  *model.Lang    // the lang argument, when the field has one
	args  map[string]any // other parsed arguments
}

// planKey names a selection set by its first and last selections, which
// are nodes of a document gqlgen has parsed and does not change (a kept
// plan holds them, so no other node can take their addresses). gqlgen
// collects a field's selections into a new slice (merging fields of the
// same name), so the slice's own address names nothing; a plan found by
// its key is used only if all its selections are the same.
type planKey struct {
	first, last ast.Selection
	n           int
	typ         string
}

func (x *fastExec) plan(sel ast.SelectionSet, typ string) *plan {
	if len(sel) == 0 {
		return &plan{}
	}
	key := planKey{sel[0], sel[len(sel)-1], len(sel), typ}
	if p, ok := x.shared.Get(key); ok && slices.Equal(p.sel, sel) {
		return p
	}
	if p := x.plans[key]; p != nil && slices.Equal(p.sel, sel) {
		return p
	}
	cfs := graphql.CollectFields(x.oc, sel, x.schema.satisfies[typ])
	kinds := x.schema.fields[typ]
	p := &plan{sel: sel, fields: make([]pfield, len(cfs))}
	for i, f := range cfs {
		if len(f.Deferrables) > 0 || hasOtherDirective(f.Directives) {
			bail()
		}
		p.fields[i].CollectedField = f
		p.fields[i].index = i
		p.fields[i].key = quotedKey(f.Alias)
		kind := kinds[f.Name]
		if kind == fieldHandedOn {
			bail()
		}
		if len(f.Arguments) == 0 {
			continue
		}
		raw := f.ArgumentMap(x.oc.Variables)
		if kind == fieldLang {
			lang, err := parseLang(raw)
			if err != nil {
				bail()
			}
			p.fields[i].lang = lang
			continue
		}
		p.fields[i].args = raw // parsed by the field's own code
	}
	if usesVariables(sel, x.oc.Doc.Fragments) {
		if x.plans == nil {
			x.plans = map[planKey]*plan{}
		}
		x.plans[key] = p
	} else {
		x.shared.Add(key, p)
	}
	return p
}

// usesVariables tells whether a variable can change how the selection set
// collects: an argument or a directive of its fields, or a directive or
// field of the fragments it spreads, refers to one. (The selections of its
// fields have plans of their own.)
func usesVariables(sel ast.SelectionSet, frags ast.FragmentDefinitionList) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if argumentsUseVariables(s.Arguments) || directivesUseVariables(s.Directives) {
				return true
			}
		case *ast.InlineFragment:
			if directivesUseVariables(s.Directives) || usesVariables(s.SelectionSet, frags) {
				return true
			}
		case *ast.FragmentSpread:
			if directivesUseVariables(s.Directives) {
				return true
			}
			def := frags.ForName(s.Name)
			if def == nil || directivesUseVariables(def.Directives) || usesVariables(def.SelectionSet, frags) {
				return true // (validation refuses unknown fragments; a cycle too)
			}
		default:
			return true
		}
	}
	return false
}

func directivesUseVariables(ds ast.DirectiveList) bool {
	for _, d := range ds {
		if argumentsUseVariables(d.Arguments) {
			return true
		}
	}
	return false
}

func argumentsUseVariables(args ast.ArgumentList) bool {
	for _, a := range args {
		if valueUsesVariable(a.Value) {
			return true
		}
	}
	return false
}

func valueUsesVariable(v *ast.Value) bool {
	if v == nil {
		return false
	}
	if v.Kind == ast.Variable {
		return true
	}
	for _, c := range v.Children {
		if valueUsesVariable(c.Value) {
			return true
		}
	}
	return false
}

func hasOtherDirective(ds ast.DirectiveList) bool {
	for _, d := range ds {
		if d.Name != "skip" && d.Name != "include" {
			return true
		}
	}
	return false
}
