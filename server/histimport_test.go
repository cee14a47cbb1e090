package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

const histImport = `mutation($h: [HistoryImportInput!]) { importIncidents(histories: $h) { created userErrors { field code message } } }`

// historyExport is export --history of a store with the seeds, one of
// them edited and one deleted, and the inputs that import it.
func historyExport(t *testing.T) ([]byte, []*model.HistoryImportInput) {
	t.Helper()
	incs := seedIncidents(t)
	src := testutil.ServerStore(t, incs, storage.Options{})
	ctx := incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: "kim", Role: incidentlib.RoleEditor})
	edited := *incs[0]
	edited.Title.En += " (edited)"
	if _, err := src.Incidents().UpsertIncident(ctx, &edited, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Incidents().DeleteIncident(ctx, incs[len(incs)-1].ID, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := src.Versions().ExportHistory(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	var ins []*model.HistoryImportInput
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		in, err := model.HistoryInputOf(l)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	return buf.Bytes(), ins
}

func exportHistory(t *testing.T, db *storage.DB) string {
	t.Helper()
	var buf bytes.Buffer
	if err := db.Versions().ExportHistory(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestImportHistoryAPI: importIncidents(histories) through the real
// handler into a real store: an editor is refused before any resolver
// runs and nothing is written; an admin's import of export --history
// round-trips byte-identical; a second import is CONFLICT naming the id
// and writes nothing; records and histories together are refused.
func TestImportHistoryAPI(t *testing.T) {
	want, ins := historyExport(t)
	s := newIDServer(t, server.Config{})
	admin := apiToken(t, s.db, "ada", incidentlib.RoleAdmin)
	editor := apiToken(t, s.db, "eve", incidentlib.RoleEditor)
	vars := map[string]any{"h": ins}

	t.Run("EditorForbidden", func(t *testing.T) {
		before, w := s.state(t), s.Work()
		r := s.send(t, "Bearer "+editor, histImport, vars)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Raw), `"FORBIDDEN"`) || !strings.Contains(string(r.Raw), "histories") {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if s.state(t) != before || exportHistory(t, s.db) != "" {
			t.Fatal("a refused history import wrote")
		}
		if s.Work().Fields != w.Fields {
			t.Fatal("a refused history import ran a resolver")
		}
	})
	t.Run("AdminRoundTrip", func(t *testing.T) {
		r := s.send(t, "Bearer "+admin, histImport, vars)
		var p struct{ ImportIncidents model.ImportPayload }
		if err := json.Unmarshal(r.Data, &p); err != nil || p.ImportIncidents.Created != len(ins) || len(p.ImportIncidents.UserErrors) > 0 {
			t.Fatalf("%v %s", err, r.Raw)
		}
		if got := exportHistory(t, s.db); got != string(want) {
			t.Fatalf("export --history after the import differs:\n%s\nwant\n%s", got, want)
		}
		if problems, err := s.db.Maintenance().Check(context.Background()); err != nil || len(problems) > 0 {
			t.Fatal(err, problems)
		}
	})
	t.Run("Conflict", func(t *testing.T) {
		before := s.state(t)
		r := s.send(t, "Bearer "+admin, histImport, map[string]any{"h": ins[len(ins)-1:]})
		if !strings.Contains(string(r.Raw), `"code":"CONFLICT"`) || !strings.Contains(string(r.Raw), ins[len(ins)-1].ID) {
			t.Fatalf("%s", r.Raw)
		}
		if s.state(t) != before || exportHistory(t, s.db) != string(want) {
			t.Fatal("a refused history import wrote")
		}
	})
	t.Run("RecordsAndHistories", func(t *testing.T) {
		before := s.state(t)
		r := s.send(t, "Bearer "+admin, `mutation($r: [IncidentInput!]!, $h: [HistoryImportInput!]) { importIncidents(records: $r, histories: $h) { userErrors { code } } }`,
			map[string]any{"r": []any{map[string]any{"id": "IL-0900", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x"}}}, "h": ins[:1]})
		if !strings.Contains(string(r.Raw), `"code":"INVALID"`) || s.state(t) != before {
			t.Fatalf("%s", r.Raw)
		}
	})
	t.Run("EditorRecordsAreDrafts", func(t *testing.T) {
		// An admin's record keeps its review; an editor's import of it is
		// unchanged; changed, it is a new version by the editor, DRAFT,
		// without the old approval.
		const imp = `mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { created updated unchanged userErrors { code message } } }`
		rec := map[string]any{"id": "IL-0950", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "Queue stalled"},
			"review": map[string]any{"writtenBy": "kim", "reviewedBy": "rita", "reviewedAt": "2024-01-01T00:00:00Z"}}
		if r := s.send(t, "Bearer "+admin, imp, map[string]any{"r": []any{rec}}); !strings.Contains(string(r.Raw), `"created":1`) {
			t.Fatalf("%s", r.Raw)
		}
		get := func() string {
			return string(s.send(t, "", `{ incident(id: "IL-0950") { version reviewState review { writtenBy reviewedBy } } }`, nil).Data)
		}
		if got := get(); !strings.Contains(got, `"version":1,"reviewState":"REVIEWED","review":{"writtenBy":"kim","reviewedBy":"rita"}`) {
			t.Fatalf("admin's import: %s", got)
		}
		// An editor may not send a review (an admin's operation:
		// TestAuthorIsTheToken); the record without it is the same record.
		delete(rec, "review")
		if r := s.send(t, "Bearer "+editor, imp, map[string]any{"r": []any{rec}}); !strings.Contains(string(r.Raw), `"unchanged":1`) {
			t.Fatalf("an editor's import of the same record: %s", r.Raw)
		}
		if got := get(); !strings.Contains(got, `"version":1,"reviewState":"REVIEWED"`) {
			t.Fatalf("after an editor's unchanged import: %s", got)
		}
		rec["title"] = map[string]any{"en": "Queue stalled for an hour"}
		if r := s.send(t, "Bearer "+editor, imp, map[string]any{"r": []any{rec}}); !strings.Contains(string(r.Raw), `"updated":1`) {
			t.Fatalf("%s", r.Raw)
		}
		if got := get(); !strings.Contains(got, `"version":2,"reviewState":"DRAFT","review":{"writtenBy":"kim","reviewedBy":null}`) {
			t.Fatalf("after an editor's import of a change: %s", got)
		}
		if h := exportHistory(t, s.db); !strings.Contains(h, `{"version":2,"at":`) || !strings.Contains(h, `"author":"eve","role":"editor","action":"IMPORT"`) {
			t.Fatalf("no IMPORT version 2 by eve:\n%s", h)
		}
	})
}
