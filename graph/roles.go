package graph

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
)

// MutationRoles is the role each mutation needs (roles are cumulative; see
// docs/editing.md). A mutation not listed needs RoleAdmin, and
// TestRolesCoverMutations fails until it is listed.
var MutationRoles = map[string]incidentlib.Role{
	"upsertIncident":   incidentlib.RoleEditor,
	"deleteIncident":   incidentlib.RoleEditor,
	"importIncidents":  incidentlib.RoleEditor,
	"reviewIncident":   incidentlib.RoleReviewer,
	"restoreIncident":  incidentlib.RoleEditor,
	"submitForReview":  incidentlib.RoleEditor,
	"withdrawIncident": incidentlib.RoleEditor,
	"purgeVersion":     incidentlib.RoleAdmin,
	"createToken":      incidentlib.RoleAdmin,
	"revokeToken":      incidentlib.RoleAdmin,
	// The taxonomy and the organizations (taxadmin.graphqls).
	"addTerm":            incidentlib.RoleAdmin,
	"updateTerm":         incidentlib.RoleAdmin,
	"addTermAliases":     incidentlib.RoleAdmin,
	"deprecateTerm":      incidentlib.RoleAdmin,
	"addOrganization":    incidentlib.RoleAdmin,
	"renameOrganization": incidentlib.RoleAdmin,
	"mergeOrganizations": incidentlib.RoleAdmin,
	// The glossary (glossary.graphqls).
	"addGlossaryEntry":    incidentlib.RoleAdmin,
	"updateGlossaryEntry": incidentlib.RoleAdmin,
	"removeGlossaryEntry": incidentlib.RoleAdmin,
}

// QueryRoles is the role the query fields that are not for every reader
// need; every other query field needs none.
var QueryRoles = map[string]incidentlib.Role{
	"tokens":          incidentlib.RoleAdmin,
	"taxonomyHistory": incidentlib.RoleAdmin,
	"incidentVersion": incidentlib.RoleEditor,
	"deletedIncident": incidentlib.RoleEditor,
}

// NestedRoles is the role the fields below the top of a query need, at
// any depth, by name: the history of an incident shows its authors.
var NestedRoles = map[string]incidentlib.Role{
	"history": incidentlib.RoleEditor,
}

// ArgumentRoles is the role a mutation needs, beyond MutationRoles, when
// it is given a non-empty argument: importing incidents with their
// history is an admin's.
var ArgumentRoles = map[string]map[string]incidentlib.Role{
	"importIncidents": {"histories": incidentlib.RoleAdmin},
}

// argumentRole is what the arguments of a top-level field need.
func argumentRole(oc *graphql.OperationContext, f *ast.Field) (incidentlib.Role, string) {
	need, what := incidentlib.RoleReader, ""
	roles := ArgumentRoles[f.Name]
	if len(roles) == 0 || f.Definition == nil {
		return need, what
	}
	args := f.ArgumentMap(oc.Variables)
	for name, r := range roles {
		if given(args[name]) && r > need {
			need, what = r, f.Name+"("+name+")"
		}
	}
	return need, what
}

// given says whether an argument's value is given and not empty: a
// non-empty list, or a single value, which GraphQL's input coercion makes
// a list of one (importIncidents(histories: {…}) is a list of one
// history, and needs what a list needs).
func given(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case []any:
		return len(v) > 0
	}
	return true
}

// RequiredRole is the role an operation needs: the most any field at its
// top needs (through fragments too), and what needs it, for the refusal's
// message. A subscription needs what a query needs.
func RequiredRole(oc *graphql.OperationContext) (incidentlib.Role, string) {
	table, unlisted, what := QueryRoles, incidentlib.RoleReader, "a query"
	if oc.Operation.Operation == ast.Mutation {
		table, unlisted, what = MutationRoles, incidentlib.RoleAdmin, "a mutation"
	}
	need := incidentlib.RoleReader
	seen := map[string]bool{}
	var walk func(ast.SelectionSet, int)
	walk = func(set ast.SelectionSet, depth int) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				if s.Name == "__typename" {
					continue
				}
				if depth > 0 {
					if r, ok := NestedRoles[s.Name]; ok && r > need {
						need, what = r, s.Name
					}
					walk(s.SelectionSet, depth+1)
					continue
				}
				r, ok := table[s.Name]
				if !ok {
					r = unlisted
				}
				if r > need {
					need, what = r, s.Name
				}
				if oc.Operation.Operation == ast.Mutation {
					if r, w := argumentRole(oc, s); r > need {
						need, what = r, w
					}
				}
				walk(s.SelectionSet, depth+1)
			case *ast.InlineFragment:
				walk(s.SelectionSet, depth)
			case *ast.FragmentSpread:
				if seen[s.Name] {
					continue
				}
				seen[s.Name] = true
				if f := oc.Doc.Fragments.ForName(s.Name); f != nil {
					walk(f.SelectionSet, depth)
				}
			}
		}
	}
	walk(oc.Operation.SelectionSet, 0)
	return need, what
}
