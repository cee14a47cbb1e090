package storage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// A cluster node's store refuses every write of the library's data that
// carries no log position: it went around the cluster's log. The cases
// are the methods of incidentlib.Writer, read from the interface, so a
// write added to it without a case here fails the test.
func TestMemberStoreRefusesWritesWithoutLogPosition(t *testing.T) {
	ctx := asUser("ada", incidentlib.RoleAdmin)
	db := MustOpenDB(t)
	incs := corpus(t, 3, 7)
	mustImport(t, db, incs)
	if _, err := db.Incidents().UpsertIncident(ctx, incs[0], incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A history to import, of incidents this store does not hold.
	src := MustOpenDB(t)
	other := corpus(t, 2, 8)
	for _, inc := range other {
		inc.ID = strings.Replace(inc.ID, "IL-1", "IL-5", 1)
	}
	mustImport(t, src, other)
	var hist bytes.Buffer
	if err := src.Versions().ExportHistory(context.Background(), &hist); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Tokens().CreateToken(ctx, "bot", incidentlib.RoleEditor, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := db.ClusterLog().MarkLogged(context.Background()); err != nil {
		t.Fatal(err)
	}
	before, beforeHist := export(t, db), exportHistory(t, db)

	id := incs[0].ID
	edited := *incs[0]
	edited.Title.En += " (edited)"
	hash := sha256.Sum256([]byte("il_not-a-real-secret"))
	org := incs[1].OrgSlug
	calls := map[string]func() error{
		"UpsertIncident": func() error {
			_, err := db.Incidents().UpsertIncident(ctx, &edited, incidentlib.WriteOptions{})
			return err
		},
		"DeleteIncident": func() error { _, err := db.Incidents().DeleteIncident(ctx, id, incidentlib.WriteOptions{}); return err },
		"ImportIncidents": func() error {
			_, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{&edited}, incidentlib.ImportOptions{})
			return err
		},
		"RestoreIncident": func() error {
			_, err := db.Incidents().RestoreIncident(ctx, id, 1, "", incidentlib.WriteOptions{})
			return err
		},
		"SubmitForReview": func() error {
			_, err := db.Incidents().SubmitForReview(ctx, id, incidentlib.WriteOptions{})
			return err
		},
		"DecideReview": func() error {
			_, err := db.Incidents().DecideReview(ctx, id, incidentlib.DecisionApprove, "", incidentlib.WriteOptions{})
			return err
		},
		"WithdrawIncident": func() error {
			_, err := db.Incidents().WithdrawIncident(ctx, id, "a hoax", incidentlib.WriteOptions{})
			return err
		},
		"PurgeVersion":  func() error { _, err := db.Incidents().PurgeVersion(ctx, id, 1, "a secret"); return err },
		"ImportHistory": func() error { _, err := db.Versions().ImportHistory(ctx, bytes.NewReader(hist.Bytes())); return err },
		"CreateToken": func() error {
			_, _, err := db.Tokens().CreateToken(ctx, "bot2", incidentlib.RoleEditor, time.Time{})
			return err
		},
		"RevokeToken": func() error { _, err := db.Tokens().RevokeToken(ctx, "bot"); return err },
		"AddTerm": func() error {
			_, err := db.Taxonomies().AddTerm(ctx, "ada", incidentlib.Term{Kind: incidentlib.KindComponent, Slug: "new-thing", Label: incidentlib.Text{En: "New thing"}})
			return err
		},
		"UpdateTerm": func() error {
			_, err := db.Taxonomies().UpdateTerm(ctx, "ada", incidentlib.KindComponent, "edge-cache", incidentlib.TermUpdate{Label: &incidentlib.Text{En: "Edge"}})
			return err
		},
		"AddTermAliases": func() error {
			_, err := db.Taxonomies().AddTermAliases(ctx, "ada", incidentlib.KindComponent, "edge-cache", []string{"edge-caches"})
			return err
		},
		"DeprecateTerm": func() error {
			_, err := db.Taxonomies().DeprecateTerm(ctx, "ada", incidentlib.KindComponent, "edge-cache", true)
			return err
		},
		"AddOrganization": func() error {
			_, err := db.Taxonomies().AddOrganization(ctx, "ada", incidentlib.Organization{Slug: "new-org", Name: "New Org"})
			return err
		},
		"RenameOrganization": func() error {
			_, _, err := db.Taxonomies().RenameOrganization(ctx, "ada", org, "A New Name")
			return err
		},
		"MergeOrganizations": func() error {
			_, err := db.Taxonomies().MergeOrganizations(ctx, "ada", org, incs[2].OrgSlug)
			return err
		},
		"AddGlossaryEntry": func() error {
			_, err := db.Taxonomies().AddGlossaryEntry(ctx, "ada", incidentlib.GlossaryEntry{En: []string{"zombie process"}, Ko: []string{"좀비 프로세스"}})
			return err
		},
		"UpdateGlossaryEntry": func() error {
			_, err := db.Taxonomies().UpdateGlossaryEntry(ctx, "ada", "zombie process", incidentlib.GlossaryEntry{En: []string{"zombie process"}, Ko: []string{"좀비"}})
			return err
		},
		"RemoveGlossaryEntry": func() error {
			_, err := db.Taxonomies().RemoveGlossaryEntry(ctx, "ada", "zombie process")
			return err
		},
	}
	wt := reflect.TypeFor[incidentlib.Writer]()
	for i := range wt.NumMethod() {
		name := wt.Method(i).Name
		t.Run(name, func(t *testing.T) {
			call, ok := calls[name]
			if !ok {
				t.Fatalf("incidentlib.Writer.%s has no case: add one", name)
			}
			err := call()
			if code := incidentlib.ErrorCode(err); code != incidentlib.EINTERNAL {
				t.Fatalf("answered %v (%s), want INTERNAL", err, code)
			}
			if !strings.Contains(err.Error(), "DB."+name) {
				t.Errorf("the refusal %q does not name the method", err)
			}
		})
	}
	t.Run("BatchedImport", func(t *testing.T) {
		imp := db.Incidents().NewBatchedImport(1, storage.BatchedImportOptions{KeepUpdatedAt: true})
		_, err := imp.Write(context.Background(), []*incidentlib.Incident{&edited}, true)
		if code := incidentlib.ErrorCode(err); code != incidentlib.EINTERNAL {
			t.Fatalf("answered %v (%s), want INTERNAL", err, code)
		}
		if !strings.Contains(err.Error(), "BatchedImport.Write") {
			t.Errorf("the refusal %q does not name the method", err)
		}
	})
	if !bytes.Equal(export(t, db), before) || !bytes.Equal(exportHistory(t, db), beforeHist) {
		t.Fatal("a refused write changed the store")
	}
	if seq := logSeq(t, db); seq != 0 {
		t.Fatalf("the log position moved to %d", seq)
	}
	if toks, err := db.Tokens().ListTokens(ctx); err != nil || len(toks) != 1 || !toks[0].Active(time.Now()) {
		t.Fatalf("tokens %v, %v: a refused token write was stored", toks, err)
	}

	// The same write under a log position, as the cluster's Applier runs
	// it, is written.
	lctx := incidentlib.WithLogPosition(ctx, incidentlib.LogPosition{Seq: 1, At: time.Now()})
	if _, err := db.Incidents().UpsertIncident(lctx, &edited, incidentlib.WriteOptions{}); err != nil {
		t.Fatalf("the write under a log position: %v", err)
	}
	if _, err := db.Tokens().CreateTokenHash(incidentlib.WithLogPosition(ctx, incidentlib.LogPosition{Seq: 2, At: time.Now()}), "bot3", incidentlib.RoleEditor, hash[:], time.Time{}); err != nil {
		t.Fatalf("the token write under a log position: %v", err)
	}
	if seq := logSeq(t, db); seq != 2 {
		t.Fatalf("log position %d, want 2", seq)
	}
}

func exportHistory(tb testing.TB, db *storage.DB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := db.Versions().ExportHistory(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
