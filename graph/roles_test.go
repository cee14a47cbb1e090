package graph_test

import (
	"testing"

	"github.com/incidentlib/incidentlib/graph"
)

// TestRolesCoverMutations: every mutation of the schema says the role it
// needs (an unlisted one would need admin), and every query field the
// table names exists.
func TestRolesCoverMutations(t *testing.T) {
	s := graph.NewExecutableSchema(graph.Config{}).Schema()
	for _, f := range s.Mutation.Fields {
		if _, ok := graph.MutationRoles[f.Name]; !ok && f.Name[0] != '_' {
			t.Errorf("mutation %s is not in graph.MutationRoles", f.Name)
		}
	}
	for name := range graph.MutationRoles {
		if s.Mutation.Fields.ForName(name) == nil {
			t.Errorf("graph.MutationRoles names %s, which the schema does not have", name)
		}
	}
	for name := range graph.QueryRoles {
		if s.Query.Fields.ForName(name) == nil {
			t.Errorf("graph.QueryRoles names %s, which the schema does not have", name)
		}
	}
}
