package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
)

// TestHistoriesGuardSingleObject: importIncidents(histories:) given one
// object instead of a list (GraphQL's input coercion makes it a list of
// one) needs the admin role like a list: an editor is refused by the role
// guard before any resolver runs, and nothing is written.
func TestHistoriesGuardSingleObject(t *testing.T) {
	_, ins := historyExport(t)
	s := newIDServer(t, server.Config{})
	editor := apiToken(t, s.db, "eve", incidentlib.RoleEditor)
	for name, q := range map[string]string{
		"Variable": histImport,
		"Literal":  `mutation { importIncidents(histories: {id: "IL-9", history: []}) { created userErrors { code } } }`,
	} {
		t.Run(name, func(t *testing.T) {
			before, w := s.state(t), s.Work()
			r := s.send(t, "Bearer "+editor, q, map[string]any{"h": ins[0]})
			if r.Status != http.StatusForbidden || !strings.Contains(string(r.Raw), `"FORBIDDEN"`) {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			if s.Work().Fields != w.Fields {
				t.Fatal("a refused history import ran a resolver")
			}
			if s.state(t) != before {
				t.Fatal("a refused history import wrote")
			}
		})
	}
}
