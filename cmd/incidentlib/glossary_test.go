package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// serve gives search the store's glossary: a store made by an older
// release (no glossary yet) gets the built-in one at serve's open, so an
// English query finds a Korean-only record through it, and an entry an
// admin adds through the API translates the next search, without a
// restart.
func TestServeSearchesThroughTheStoresGlossary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()}) // no glossary, as an older release
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(context.Background(), []*incidentlib.Incident{
		{ID: "IL-0001", Org: "Alpha", OrgSlug: "alpha", Title: incidentlib.Text{Ko: "MySQL 복제 지연으로 결제가 멈췄다"}, UpdatedAt: "2026-01-01T00:00:00Z"},
		{ID: "IL-0002", Org: "Beta", OrgSlug: "beta", Title: incidentlib.Text{Ko: "좀비 프로세스 누적으로 서버 중단"}, UpdatedAt: "2026-01-01T00:00:00Z"},
	}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	base := serveInProcess(t, path)
	auth := "Bearer " + crashToken
	search := func(q string) string {
		t.Helper()
		status, body := postGraphQL(t, base, auth, `query($q: String!) { search(query: $q) { edges { node { id } } } }`, map[string]any{"q": q})
		if status != http.StatusOK || strings.Contains(body, `"errors"`) {
			t.Fatalf("search %q: %d %s", q, status, body)
		}
		return body
	}
	if body := search("replication lag"); !strings.Contains(body, "IL-0001") {
		t.Fatalf("the built-in glossary is not the store's: %s", body)
	}
	if body := search("zombie process"); strings.Contains(body, "IL-0002") {
		t.Fatalf("found before the entry: %s", body)
	}
	status, body := postGraphQL(t, base, auth, `mutation { addGlossaryEntry(input: {en: ["zombie process"], ko: ["좀비 프로세스"]}) { entry { key } userErrors { code message } } }`, nil)
	if status != http.StatusOK || !strings.Contains(body, `"key":"zombie process"`) {
		t.Fatalf("addGlossaryEntry: %d %s", status, body)
	}
	if body := search("zombie process"); !strings.Contains(body, "IL-0002") {
		t.Fatalf("the admin's entry does not translate: %s", body)
	}
}
