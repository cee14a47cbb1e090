package storage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
	bolt "go.etcd.io/bbolt"
)

// wrReview approves id as reviewer: it submits the incident first when it
// is a DRAFT (opts checked on the first write).
func wrReview(ctx context.Context, db *storage.DB, id, reviewer string, opts incidentlib.WriteOptions) (*incidentlib.Incident, error) {
	ctx = incidentlib.WithIdentity(ctx, incidentlib.Identity{Name: reviewer, Role: incidentlib.RoleReviewer})
	incs, err := db.Incidents().FindIncidentsByIDs(ctx, []string{id})
	if err == nil && incs[0] != nil && incs[0].State() == incidentlib.ReviewDraft {
		if _, err := db.Incidents().SubmitForReview(ctx, id, opts); err != nil {
			return nil, err
		}
		opts = incidentlib.WriteOptions{}
	}
	return db.Incidents().DecideReview(ctx, id, incidentlib.DecisionApprove, "", opts)
}

func asUser(name string, role incidentlib.Role) context.Context {
	return incidentlib.WithIdentity(context.Background(), incidentlib.Identity{Name: name, Role: role})
}

func hsHistory(tb testing.TB, db *storage.DB, id string) []*incidentlib.IncidentVersion {
	tb.Helper()
	p, err := db.Versions().History(context.Background(), id, incidentlib.MaxPageSize, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return p.Versions
}

// hsContent is a record's IL-JSON without what every write stamps
// (version, updated_at, review state).
func hsContent(tb testing.TB, rec []byte) string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rec, &m); err != nil {
		tb.Fatal(err)
	}
	delete(m, "version")
	delete(m, "updated_at")
	delete(m, "review_state")
	delete(m, "review")
	b, _ := json.Marshal(m)
	return string(b)
}

func TestHistoryVersions(t *testing.T) {
	db := wrOpen(t, true)
	kim := asUser("kim", incidentlib.RoleEditor)
	lee := asUser("lee", incidentlib.RoleEditor)
	in := wrIncident("IL-0001", "Acme", "acme", "first")
	in.Review.WrittenBy = "someone else"
	v1, err := db.Incidents().UpsertIncident(kim, in, incidentlib.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v1.CurrentVersion() != 1 || v1.CreatedAt == "" || v1.State() != incidentlib.ReviewDraft || v1.Review.WrittenBy != "kim" {
		t.Fatalf("first version: %+v", v1)
	}
	in2 := wrIncident("IL-0001", "Acme", "acme", "second")
	in2.Lessons.Ko = "교훈"
	v2, err := db.Incidents().UpsertIncident(lee, in2, incidentlib.WriteOptions{ExpectedVersion: wrPtr(1)})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Version != 2 || v2.CreatedAt != v1.CreatedAt || v2.Review.WrittenBy != "kim" {
		t.Fatalf("second version: %+v", v2)
	}
	t.Run("StaleVersionConflicts", func(t *testing.T) {
		seq := db.Incidents().Seq()
		_, err := db.Incidents().UpsertIncident(lee, wrIncident("IL-0001", "Acme", "acme", "third"), incidentlib.WriteOptions{ExpectedVersion: wrPtr(1)})
		if incidentlib.ErrorCode(err) != incidentlib.ECONFLICT || db.Incidents().Seq() != seq {
			t.Fatalf("%v; seq %d -> %d", err, seq, db.Incidents().Seq())
		}
	})
	h := hsHistory(t, db, "IL-0001")
	if len(h) != 2 || h[0].Version != 2 || h[1].Version != 1 {
		t.Fatalf("history %+v", h)
	}
	if h[1].Author != "kim" || h[1].Action != incidentlib.ActionCreate || h[0].Author != "lee" || h[0].Action != incidentlib.ActionUpdate {
		t.Fatalf("authors and actions: %+v %+v", h[1], h[0])
	}
	if !slices.Equal(h[0].ChangedFields, []string{"lessons.ko", "title.en"}) {
		t.Fatalf("changed fields %v", h[0].ChangedFields)
	}
	for _, v := range []*incidentlib.Incident{v1, v2} {
		want, _ := json.Marshal(v)
		got, err := db.Versions().IncidentVersion(context.Background(), "IL-0001", v.CurrentVersion())
		if err != nil || got == nil || string(got.Record) != string(want) {
			t.Fatalf("version %d: %s, want %s (%v)", v.CurrentVersion(), got.Record, want, err)
		}
	}
	wrClean(t, db)
}

func TestDeleteRestore(t *testing.T) {
	db := wrOpen(t, true)
	ctx := asUser("kim", incidentlib.RoleEditor)
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "target"))
	src := wrIncident("IL-0002", "Acme", "acme", "links")
	src.Related = []string{"IL-0001"}
	src.RecurrenceOf = "IL-0001"
	wrUpsert(t, db, src)
	before, _ := db.Versions().IncidentVersion(ctx, "IL-0001", 1)
	res, err := db.Incidents().DeleteIncident(ctx, "IL-0001", incidentlib.WriteOptions{ExpectedVersion: wrPtr(1)})
	if err != nil || !slices.Equal(res.Unlinked, []string{"IL-0002"}) {
		t.Fatalf("%+v %v", res, err)
	}
	if wrGet(t, db, "IL-0001") != nil {
		t.Fatal("a deleted incident is still read")
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{}); n != 1 {
		t.Fatalf("%d incidents listed", n)
	}
	gone, tomb, err := db.Versions().DeletedIncident(ctx, "IL-0001")
	if err != nil || tomb == nil || tomb.Version != 2 || tomb.Author != "kim" || gone.Title.En != "target" {
		t.Fatalf("deleted: %+v %+v %v", gone, tomb, err)
	}
	t.Run("UpsertOfDeletedConflicts", func(t *testing.T) {
		seq := db.Incidents().Seq()
		_, err := db.Incidents().UpsertIncident(ctx, wrIncident("IL-0001", "Acme", "acme", "again"), incidentlib.WriteOptions{})
		if incidentlib.ErrorCode(err) != incidentlib.ECONFLICT || db.Incidents().Seq() != seq {
			t.Fatalf("%v", err)
		}
	})
	got, err := db.Incidents().RestoreIncident(ctx, "IL-0001", 1, "wrongly deleted", incidentlib.WriteOptions{ExpectedVersion: wrPtr(2)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 3 {
		t.Fatalf("restored at version %d", got.Version)
	}
	rec, _ := json.Marshal(got)
	if hsContent(t, rec) != hsContent(t, before.Record) {
		t.Fatalf("restored\n%s\nwant\n%s", rec, before.Record)
	}
	back := wrGet(t, db, "IL-0002")
	if !slices.Equal(back.Related, []string{"IL-0001"}) || back.RecurrenceOf != "IL-0001" {
		t.Fatalf("links not restored: %+v %q", back.Related, back.RecurrenceOf)
	}
	h := hsHistory(t, db, "IL-0001")
	if h[0].Action != incidentlib.ActionRestore || h[0].Comment != "wrongly deleted" || h[1].Action != incidentlib.ActionDelete || !h[1].Deleted {
		t.Fatalf("history %+v %+v", h[0], h[1])
	}
	t.Run("RestoreOldVersion", func(t *testing.T) {
		wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "changed"))
		got, err := db.Incidents().RestoreIncident(ctx, "IL-0001", 1, "", incidentlib.WriteOptions{})
		if err != nil || got.Title.En != "target" || got.Version != 5 {
			t.Fatalf("%+v %v", got, err)
		}
	})
	wrClean(t, db)
}

func TestReviewWorkflow(t *testing.T) {
	db := wrOpen(t, true)
	kim := asUser("kim", incidentlib.RoleReviewer)
	lee := asUser("lee", incidentlib.RoleReviewer)
	if _, err := db.Incidents().UpsertIncident(kim, wrIncident("IL-0001", "Acme", "acme", "t"), incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := func(t *testing.T, code string, fn func() error) {
		t.Helper()
		seq := db.Incidents().Seq()
		if err := fn(); incidentlib.ErrorCode(err) != code || db.Incidents().Seq() != seq {
			t.Fatalf("%v, want %s and nothing written", err, code)
		}
	}
	refused(t, incidentlib.EINVALIDSTATE, func() error {
		_, err := db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionApprove, "", incidentlib.WriteOptions{})
		return err
	})
	if _, err := db.Incidents().SubmitForReview(kim, "IL-0001", incidentlib.WriteOptions{ExpectedVersion: wrPtr(1)}); err != nil {
		t.Fatal(err)
	}
	refused(t, incidentlib.ESELFREVIEW, func() error {
		_, err := db.Incidents().DecideReview(kim, "IL-0001", incidentlib.DecisionApprove, "", incidentlib.WriteOptions{})
		return err
	})
	if n := wrCount(t, db, incidentlib.IncidentFilter{ReviewStates: []incidentlib.ReviewState{incidentlib.ReviewInReview}}); n != 1 {
		t.Fatalf("IN_REVIEW lists %d", n)
	}
	got, err := db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionApprove, "checked the sources", incidentlib.WriteOptions{ExpectedVersion: wrPtr(2)})
	if err != nil || got.State() != incidentlib.ReviewReviewed || got.Review.ReviewedBy != "lee" || got.Version != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{Reviewed: wrPtr(true)}); n != 1 {
		t.Fatalf("reviewed lists %d", n)
	}
	// An edit returns it to DRAFT.
	edited, err := db.Incidents().UpsertIncident(lee, wrIncident("IL-0001", "Acme", "acme", "t2"), incidentlib.WriteOptions{})
	if err != nil || edited.State() != incidentlib.ReviewDraft || edited.Review.ReviewedAt != "" {
		t.Fatalf("%+v %v", edited, err)
	}
	if _, err := db.Incidents().SubmitForReview(lee, "IL-0001", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// lee wrote a version since the last approval.
	refused(t, incidentlib.ESELFREVIEW, func() error {
		_, err := db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionApprove, "", incidentlib.WriteOptions{})
		return err
	})
	if got, err := db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionDispute, "a source contradicts it", incidentlib.WriteOptions{}); err != nil || got.State() != incidentlib.ReviewDisputed {
		t.Fatalf("%+v %v", got, err)
	}
	wrUpsert(t, db, wrIncident("IL-0002", "Acme", "acme", "other"))
	if _, err := db.Incidents().WithdrawIncident(kim, "IL-0001", "a hoax", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{}); n != 1 {
		t.Fatalf("a withdrawn incident is listed: %d", n)
	}
	if c, err := db.Incidents().CountIncidentsBy(context.Background(), []incidentlib.CountKey{{Kind: incidentlib.CountKindOrganization, Slug: "acme"}}); err != nil || c[0] != 1 {
		t.Fatalf("the organization counts %v (%v), want 1: the withdrawn incident left", c, err)
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{ReviewStates: []incidentlib.ReviewState{incidentlib.ReviewWithdrawn}}); n != 1 {
		t.Fatalf("withdrawn lists %d", n)
	}
	if wrGet(t, db, "IL-0001") == nil {
		t.Fatal("a withdrawn incident is not readable by id")
	}
	refused(t, incidentlib.EINVALIDSTATE, func() error {
		_, err := db.Incidents().WithdrawIncident(kim, "IL-0001", "again", incidentlib.WriteOptions{})
		return err
	})
	h := hsHistory(t, db, "IL-0001")
	var actions []incidentlib.ChangeAction
	for _, v := range h {
		actions = append(actions, v.Action)
	}
	want := []incidentlib.ChangeAction{incidentlib.ActionWithdraw, incidentlib.ActionDispute, incidentlib.ActionSubmit, incidentlib.ActionUpdate,
		incidentlib.ActionApprove, incidentlib.ActionSubmit, incidentlib.ActionCreate}
	if !slices.Equal(actions, want) {
		t.Fatalf("actions %v, want %v", actions, want)
	}
	wrClean(t, db)
	t.Run("AllowSelfReview", func(t *testing.T) {
		db := wrOpenWith(t, storage.Options{NoSync: true, AllowSelfReview: true})
		if _, err := db.Incidents().UpsertIncident(kim, wrIncident("IL-0001", "Acme", "acme", "t"), incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := wrReview(kim, db, "IL-0001", "kim", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPurgeVersion(t *testing.T) {
	db := wrOpen(t, true)
	ctx := asUser("root", incidentlib.RoleAdmin)
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "libel"))
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "fixed"))
	if _, err := db.Incidents().PurgeVersion(ctx, "IL-0001", 2, "current"); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("purging the current version: %v", err)
	}
	e, err := db.Incidents().PurgeVersion(ctx, "IL-0001", 1, "takedown request")
	if err != nil || e.Action != incidentlib.ActionPurge || e.Version != 3 || e.Target != 1 {
		t.Fatalf("%+v %v", e, err)
	}
	v1, _ := db.Versions().IncidentVersion(ctx, "IL-0001", 1)
	if v1 == nil || v1.Record != nil {
		t.Fatalf("purged version still has its record: %+v", v1)
	}
	if _, err := db.Incidents().RestoreIncident(ctx, "IL-0001", 1, "", incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
		t.Fatalf("restore of a purged version: %v", err)
	}
	wrClean(t, db)
}

// TestUpgradeFromStoreBeforeHistory opens a store written by the release
// before the history (testdata, five seeds, IL-0213 reviewed): it is
// upgraded in place, every incident at version 1 (IMPORT by migration),
// REVIEWED where reviewed_at is set and DRAFT otherwise, and check is
// clean.
func TestUpgradeFromStoreBeforeHistory(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "store-before-history.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of an older store: %v", err)
	}
	before := wrExport(t, ro)
	ro.Close()
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wrClean(t, db)
	if after := wrExport(t, db); after != before {
		t.Fatal("the upgrade changed the records")
	}
	incs, err := db.Incidents().AllIncidents(context.Background())
	if err != nil || len(incs) != 5 {
		t.Fatalf("%d incidents, %v", len(incs), err)
	}
	for _, inc := range incs {
		want := incidentlib.ReviewDraft
		if inc.ID == "IL-0213" {
			want = incidentlib.ReviewReviewed
		}
		if inc.CurrentVersion() != 1 || inc.State() != want {
			t.Errorf("%s: version %d, state %s, want 1 and %s", inc.ID, inc.CurrentVersion(), inc.State(), want)
		}
		h := hsHistory(t, db, inc.ID)
		if len(h) != 1 || h[0].Author != incidentlib.AuthorMigration || h[0].Action != incidentlib.ActionImport || h[0].Record == nil {
			t.Errorf("%s: history %+v", inc.ID, h)
		}
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{ReviewStates: []incidentlib.ReviewState{incidentlib.ReviewReviewed}}); n != 1 {
		t.Errorf("REVIEWED lists %d, want 1", n)
	}
	// The next edit is version 2.
	inc := wrClone(t, incs[1])
	inc.Title.En += " (edited)"
	if got, err := db.Incidents().UpsertIncident(context.Background(), inc, incidentlib.WriteOptions{ExpectedVersion: wrPtr(1)}); err != nil || got.Version != 2 {
		t.Fatalf("%v %v", got, err)
	}
	wrClean(t, db)
	// A replica following from 0 receives every version.
	vs, err := db.Versions().VersionsSince(context.Background(), 0, 100)
	if err != nil || len(vs) != 6 {
		t.Fatalf("%d versions, %v", len(vs), err)
	}
}

// TestNewerStoreRefused: a store of a newer format names both versions.
func TestNewerStoreRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Bolt().Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 99})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, ro := range []bool{false, true} {
		_, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: ro})
		if err == nil || !strings.Contains(err.Error(), "version 99") || !strings.Contains(err.Error(), "version 2") {
			t.Fatalf("read-only %v: %v", ro, err)
		}
	}
}

func TestCompactHistory(t *testing.T) {
	db := wrOpen(t, true)
	ctx := context.Background()
	for i := range 3 {
		wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", fmt.Sprint("v", i)))
	}
	wrUpsert(t, db, wrIncident("IL-0002", "Acme", "acme", "x"))
	if _, err := db.Incidents().DeleteIncident(ctx, "IL-0002", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := db.Maintenance().CompactHistory(ctx, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || n != 2 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if h := hsHistory(t, db, "IL-0001"); len(h) != 1 || h[0].Version != 3 {
		t.Fatalf("history %+v", h)
	}
	if _, err := db.Incidents().RestoreIncident(ctx, "IL-0002", 1, "", incidentlib.WriteOptions{}); err != nil {
		t.Fatalf("a deleted incident is no longer restorable: %v", err)
	}
	if _, err := db.Versions().VersionsSince(ctx, 0, 10); incidentlib.ErrorCode(err) != incidentlib.ESEQUENCECOMPACTED {
		t.Fatalf("%v, want %s", err, incidentlib.ESEQUENCECOMPACTED)
	}
	wrClean(t, db)
}

// hsRandom makes steps random edits, reviews, deletes and restores by
// three authors, keeping every record written, then checks the store and
// that every version reads back equal to what was written.
func hsRandom(t *testing.T, steps int) {
	db := wrOpen(t, true)
	rng := rand.New(rand.NewPCG(7, uint64(steps)))
	users := []context.Context{asUser("kim", incidentlib.RoleReviewer), asUser("lee", incidentlib.RoleReviewer), asUser("park", incidentlib.RoleEditor)}
	written := map[string]map[int]string{} // id -> version -> record
	note := func(inc *incidentlib.Incident) {
		if inc == nil {
			return
		}
		b, _ := json.Marshal(inc)
		if written[inc.ID] == nil {
			written[inc.ID] = map[int]string{}
		}
		written[inc.ID][inc.CurrentVersion()] = string(b)
	}
	const ids = 12
	for i := range steps {
		ctx := users[rng.IntN(len(users))]
		id := incidentlib.FormatID(uint32(1 + rng.IntN(ids)))
		var inc *incidentlib.Incident
		var err error
		switch r := rng.IntN(100); {
		case r < 45:
			in := wrIncident(id, "Acme", "acme", fmt.Sprint("edit ", i))
			if rng.IntN(3) == 0 {
				in.Related = []string{incidentlib.FormatID(uint32(1 + rng.IntN(ids)))}
				if in.Related[0] == id {
					in.Related = nil
				}
			}
			inc, err = db.Incidents().UpsertIncident(ctx, in, incidentlib.WriteOptions{})
		case r < 55:
			inc, err = db.Incidents().SubmitForReview(ctx, id, incidentlib.WriteOptions{})
		case r < 70:
			d := []incidentlib.ReviewDecision{incidentlib.DecisionApprove, incidentlib.DecisionRequestChanges, incidentlib.DecisionDispute}[rng.IntN(3)]
			inc, err = db.Incidents().DecideReview(ctx, id, d, "", incidentlib.WriteOptions{})
		case r < 75:
			inc, err = db.Incidents().WithdrawIncident(ctx, id, "why", incidentlib.WriteOptions{})
		case r < 87:
			_, err = db.Incidents().DeleteIncident(ctx, id, incidentlib.WriteOptions{})
		default:
			inc, err = db.Incidents().RestoreIncident(ctx, id, 1+rng.IntN(4), "", incidentlib.WriteOptions{})
		}
		switch incidentlib.ErrorCode(err) {
		case "", incidentlib.ENOTFOUND, incidentlib.ECONFLICT, incidentlib.EINVALIDSTATE, incidentlib.ESELFREVIEW, incidentlib.EINVALID:
		default:
			t.Fatalf("step %d: %v", i, err)
		}
		if err == nil {
			note(inc)
		}
	}
	wrClean(t, db)
	for id, vs := range written {
		for v, rec := range vs {
			got, err := db.Versions().IncidentVersion(context.Background(), id, v)
			if err != nil || got == nil || string(got.Record) != rec {
				t.Fatalf("%s version %d reads %s, want %s (%v)", id, v, got.Record, rec, err)
			}
		}
	}
}

func TestRandomHistory(t *testing.T) { hsRandom(t, 50) }

// TestHistoryExportRoundTrip: export --history, history import into an
// empty store, export --history again: the same bytes, and the same
// plain export; importing into a store that has the history is CONFLICT.
func TestHistoryExportRoundTrip(t *testing.T) {
	src := wrOpen(t, true)
	kim, lee := asUser("kim", incidentlib.RoleEditor), asUser("lee", incidentlib.RoleReviewer)
	for i := 1; i <= 4; i++ {
		in := wrIncident(incidentlib.FormatID(uint32(i)), "Acme", "acme", fmt.Sprint("t", i))
		if i > 1 {
			in.Related = []string{"IL-0001"}
		}
		if _, err := src.Incidents().UpsertIncident(kim, in, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Incidents().UpsertIncident(lee, wrIncident("IL-0002", "Acme", "acme", "edited <&>"), incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := wrReview(context.Background(), src, "IL-0002", "lee2", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Incidents().DeleteIncident(kim, "IL-0003", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Incidents().PurgeVersion(kim, "IL-0002", 1, "takedown"); err != nil {
		t.Fatal(err)
	}
	var a bytes.Buffer
	if err := src.Versions().ExportHistory(context.Background(), &a); err != nil {
		t.Fatal(err)
	}
	dst := wrOpen(t, true)
	if n, err := dst.Versions().ImportHistory(context.Background(), bytes.NewReader(a.Bytes())); err != nil || n != 4 {
		t.Fatalf("imported %d, %v", n, err)
	}
	var b bytes.Buffer
	if err := dst.Versions().ExportHistory(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("export --history differs after import:\n%s\n%s", a.String(), b.String())
	}
	if wrExport(t, src) != wrExport(t, dst) {
		t.Fatal("the plain exports differ")
	}
	wrClean(t, dst)
	seq := dst.Incidents().Seq()
	if _, err := dst.Versions().ImportHistory(context.Background(), bytes.NewReader(a.Bytes())); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT || dst.Incidents().Seq() != seq {
		t.Fatalf("a second import: %v", err)
	}
	// A plain export round-trips with the new members (version,
	// review_state, created_at).
	plain := wrOpen(t, true)
	var incs []*incidentlib.Incident
	for _, line := range strings.Split(strings.TrimSpace(wrExport(t, src)), "\n") {
		var inc incidentlib.Incident
		if err := json.Unmarshal([]byte(line), &inc); err != nil {
			t.Fatal(err)
		}
		incs = append(incs, &inc)
	}
	if _, err := plain.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		t.Fatal(err)
	}
	if wrExport(t, plain) != wrExport(t, src) {
		t.Fatal("export, import, export is not byte-identical")
	}
	wrClean(t, plain)
}

// TestImportKeepsHistoryMembers: a record imported without version,
// created_at and review_state, identical otherwise to the stored one, is
// unchanged; a changed one gets the next version and keeps created_at.
func TestImportKeepsHistoryMembers(t *testing.T) {
	db := wrOpen(t, true)
	ctx := asUser("kim", incidentlib.RoleEditor)
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "a"))
	v2 := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "b"))
	in := wrClone(t, v2)
	in.Version, in.CreatedAt, in.ReviewState = 0, "", ""
	res, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{in}, incidentlib.ImportOptions{KeepUpdatedAt: true})
	if err != nil || res.Unchanged != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	in.Title.En = "c"
	if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{in}, incidentlib.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	got := wrGet(t, db, "IL-0001")
	if got.Version != 3 || got.CreatedAt != v2.CreatedAt || got.State() != incidentlib.ReviewDraft {
		t.Fatalf("%+v", got)
	}
	if h := hsHistory(t, db, "IL-0001"); h[0].Action != incidentlib.ActionImport || h[0].Author != "kim" {
		t.Fatalf("%+v", h[0])
	}
	wrClean(t, db)
}

// TestChangesCarryVersions: the change log's entries carry the version
// and action of the change.
func TestChangesCarryVersions(t *testing.T) {
	db := wrOpen(t, true)
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "a"))
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "b"))
	wrUpsert(t, db, wrIncident("IL-0002", "Acme", "acme", "a"))
	if _, err := db.Incidents().DeleteIncident(context.Background(), "IL-0002", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, err := db.Incidents().ChangesSince(context.Background(), 0, 10)
	if err != nil || len(cs) != 2 {
		t.Fatalf("%+v %v", cs, err)
	}
	if cs[0].Version != 2 || cs[0].Action != incidentlib.ActionUpdate || cs[1].Version != 2 || incidentlib.ActionOf(cs[1]) != incidentlib.ActionDelete {
		t.Fatalf("%+v", cs)
	}
}

// TestMergeWritesVersions: an import's merge writes MERGE versions: the
// merged-away incident's tombstone and the re-pointed links.
func TestMergeWritesVersions(t *testing.T) {
	db := wrOpen(t, true)
	ctx := context.Background()
	b := wrIncident("IL-0002", "Acme", "acme", "b")
	b.Related = []string{"IL-0003"}
	incs := []*incidentlib.Incident{wrIncident("IL-0001", "Acme", "acme", "a"), wrIncident("IL-0003", "Acme", "acme", "c"), b}
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(ctx, incs[:1], incidentlib.ImportOptions{Merges: map[string]string{"IL-0003": "IL-0001"}}); err != nil {
		t.Fatal(err)
	}
	h := hsHistory(t, db, "IL-0003")
	if !h[0].Deleted || h[0].Action != incidentlib.ActionMerge || h[0].Author != incidentlib.AuthorImport {
		t.Fatalf("%+v", h[0])
	}
	if h := hsHistory(t, db, "IL-0002"); h[0].Action != incidentlib.ActionMerge || !slices.Equal(h[0].ChangedFields, []string{"related"}) {
		t.Fatalf("%+v", h[0])
	}
	wrClean(t, db)
}

// TestChangedFieldsEscapes: changed fields of records whose text holds
// quotes, backslashes, braces and commas.
func TestChangedFieldsEscapes(t *testing.T) {
	db := wrOpen(t, true)
	a := wrIncident("IL-0001", "Acme", "acme", `a "quoted, {braced}" \ title`)
	a.Summary.Ko = `요약 ", [x]`
	wrUpsert(t, db, a)
	b := wrIncident("IL-0001", "Acme", "acme", `a "quoted, {braced}" \ title`)
	b.Summary.Ko = `요약 ", [y]`
	b.Related = nil
	b.Lessons.En = "new"
	wrUpsert(t, db, b)
	if h := hsHistory(t, db, "IL-0001"); !slices.Equal(h[0].ChangedFields, []string{"lessons.en", "summary.ko"}) {
		t.Fatalf("%v", h[0].ChangedFields)
	}
}
