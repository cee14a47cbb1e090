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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// wrOpen opens a real store in a temp dir with a clock that moves one
// second per write transaction, so every stamp differs.
func wrOpen(tb testing.TB, noSync bool) *storage.DB {
	tb.Helper()
	return wrOpenWith(tb, storage.Options{NoSync: noSync})
}

// wrOpenWith is wrOpen with more options.
func wrOpenWith(tb testing.TB, opts storage.Options) *storage.DB {
	tb.Helper()
	opts.Taxonomy, opts.RecordCache = seeds.MustTaxonomy(), 1000
	db, err := storage.Open(filepath.Join(tb.TempDir(), "write.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	var tick atomic.Int64
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Second) }
	return db
}

func wrIncident(id, org, slug, title string) *incidentlib.Incident {
	return &incidentlib.Incident{ID: id, Org: org, OrgSlug: slug, Title: incidentlib.Text{En: title}}
}

func wrExport(tb testing.TB, db *storage.DB) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := db.Maintenance().Export(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

func wrClean(tb testing.TB, db *storage.DB) {
	tb.Helper()
	problems, err := db.Maintenance().Check(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if len(problems) > 0 {
		tb.Fatalf("check found %d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

func wrGet(tb testing.TB, db *storage.DB, id string) *incidentlib.Incident {
	tb.Helper()
	incs, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{id})
	if err != nil {
		tb.Fatal(err)
	}
	if incs[0] == nil {
		return nil
	}
	return wrClone(tb, incs[0])
}

// wrClone deep-copies a record (stored records are shared and read-only).
func wrClone(tb testing.TB, inc *incidentlib.Incident) *incidentlib.Incident {
	tb.Helper()
	b, err := json.Marshal(inc)
	if err != nil {
		tb.Fatal(err)
	}
	var c incidentlib.Incident
	if err := json.Unmarshal(b, &c); err != nil {
		tb.Fatal(err)
	}
	return &c
}

func wrUpsert(tb testing.TB, db *storage.DB, inc *incidentlib.Incident) *incidentlib.Incident {
	tb.Helper()
	out, err := db.Incidents().UpsertIncident(context.Background(), inc, incidentlib.WriteOptions{})
	if err != nil {
		tb.Fatalf("wrUpsert %s: %v", inc.ID, err)
	}
	return out
}

func wrCount(tb testing.TB, db *storage.DB, f incidentlib.IncidentFilter) int {
	tb.Helper()
	n, err := db.Incidents().CountIncidents(context.Background(), f)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func wrHasField(err error, field []string) bool {
	for _, e := range incidentlib.ErrorList(err) {
		if slices.Equal(e.Field, field) {
			return true
		}
	}
	return false
}

func wrPtr[T any](v T) *T { return &v }

func TestUpsertIncident(t *testing.T) {
	ctx := context.Background()
	t.Run("SmallestInput", func(t *testing.T) {
		db := wrOpen(t, false)
		got := wrUpsert(t, db, &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{Ko: "장애"}})
		if got.UpdatedAt == "" {
			t.Fatal("updated_at was not stamped")
		}
		stored := wrGet(t, db, "IL-0001")
		if stored == nil || stored.Title.Ko != "장애" || stored.UpdatedAt != got.UpdatedAt {
			t.Fatalf("stored %+v, returned %+v", stored, got)
		}
		if n := wrCount(t, db, incidentlib.IncidentFilter{Organizations: []string{"acme"}}); n != 1 {
			t.Fatalf("organization index holds %d incidents, want 1", n)
		}
		wrClean(t, db)
	})
	t.Run("GivenUpdatedAtIsReplaced", func(t *testing.T) {
		db := wrOpen(t, false)
		in := wrIncident("IL-0001", "Acme", "acme", "t")
		in.UpdatedAt = "2001-01-01T00:00:00Z"
		if got := wrUpsert(t, db, in); got.UpdatedAt == in.UpdatedAt {
			t.Fatal("updated_at was taken from the input")
		}
	})
	t.Run("UpdateMovesEveryIndex", func(t *testing.T) {
		db := wrOpen(t, false)
		wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "first"))
		a := wrIncident("IL-0002", "Acme", "acme", "a")
		a.Domain, a.Severity, a.Date = []string{"database"}, "sev1", "2020-05-01"
		first := wrUpsert(t, db, a)
		b := wrIncident("IL-0002", "Globex", "globex", "b")
		b.Domain, b.Severity, b.Date, b.RecurrenceOf = []string{"networking"}, "sev2", "2021-06-01", "IL-0001"
		second := wrUpsert(t, db, b)
		if second.UpdatedAt == first.UpdatedAt {
			t.Fatal("the update was not stamped anew")
		}
		for _, c := range []struct {
			name string
			f    incidentlib.IncidentFilter
			want int
		}{
			{"OldDomain", incidentlib.IncidentFilter{Domains: []string{"database"}}, 0},
			{"NewDomain", incidentlib.IncidentFilter{Domains: []string{"networking"}}, 1},
			{"OldSeverity", incidentlib.IncidentFilter{Severities: []string{"sev1"}}, 0},
			{"OldOrganization", incidentlib.IncidentFilter{Organizations: []string{"acme"}}, 1},
			{"NewOrganization", incidentlib.IncidentFilter{Organizations: []string{"globex"}}, 1},
			{"OldYear", incidentlib.IncidentFilter{DateFrom: wrPtr("2020-01-01"), DateTo: wrPtr("2020-12-31")}, 0},
			{"HasRecurrences", incidentlib.IncidentFilter{HasRecurrences: wrPtr(true)}, 1},
			{"UpdatedSince", incidentlib.IncidentFilter{UpdatedSince: &second.UpdatedAt}, 1},
		} {
			if got := wrCount(t, db, c.f); got != c.want {
				t.Errorf("%s: %d incidents, want %d", c.name, got, c.want)
			}
		}
		recs, err := db.Incidents().RecurrenceIDs(ctx, []string{"IL-0001"})
		if err != nil || !slices.Equal(recs[0], []string{"IL-0002"}) {
			t.Fatalf("recurrences of IL-0001: %v %v", recs, err)
		}
		wrClean(t, db)
	})
	t.Run("UnchangedWritesNothing", func(t *testing.T) {
		db := wrOpen(t, false)
		first := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "t"))
		seq := db.Incidents().Seq()
		again := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "t"))
		if db.Incidents().Seq() != seq || again.UpdatedAt != first.UpdatedAt {
			t.Fatalf("an unchanged wrUpsert wrote: seq %d -> %d, updated_at %s -> %s", seq, db.Incidents().Seq(), first.UpdatedAt, again.UpdatedAt)
		}
	})
	t.Run("ChangeNeedsNewReview", func(t *testing.T) {
		db := wrOpen(t, false)
		wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "t"))
		if _, err := wrReview(ctx, db, "IL-0001", "kim", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		same := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "t"))
		if same.Review.ReviewedBy != "kim" {
			t.Fatal("an unchanged wrUpsert dropped the review")
		}
		changed := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "t2"))
		if changed.Review.ReviewedAt != "" || wrGet(t, db, "IL-0001").Review.ReviewedAt != "" {
			t.Fatal("a changed record kept its review")
		}
		if n := wrCount(t, db, incidentlib.IncidentFilter{Reviewed: wrPtr(true)}); n != 0 {
			t.Fatalf("reviewed index holds %d incidents, want 0", n)
		}
		wrClean(t, db)
	})
	t.Run("OrganizationRenamedWithItsOnlyIncident", func(t *testing.T) {
		db := wrOpen(t, false)
		wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "t"))
		wrUpsert(t, db, wrIncident("IL-0001", "Acme Corporation", "acme", "t"))
		orgs, err := db.Taxonomies().FindOrganizationsBySlugs(ctx, []string{"acme"})
		if err != nil || orgs[0] == nil || orgs[0].Name != "Acme Corporation" {
			t.Fatalf("organization: %+v %v", orgs, err)
		}
		wrClean(t, db)
	})
}

// TestUpsertValidation has one case per validation rule. Each bad write
// must give INVALID naming the field, and change nothing.
func TestUpsertValidation(t *testing.T) {
	db := wrOpen(t, false)
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "one"))
	two := wrIncident("IL-0002", "Globex", "globex", "two")
	two.RecurrenceOf = "IL-0001"
	wrUpsert(t, db, two)
	three := wrIncident("IL-0003", "Globex", "globex", "three")
	three.RecurrenceOf = "IL-0002"
	wrUpsert(t, db, three)

	cases := []struct {
		name  string
		edit  func(inc *incidentlib.Incident)
		opts  incidentlib.WriteOptions
		field []string
	}{
		{"IDFormat", func(i *incidentlib.Incident) { i.ID = "IL-12" }, incidentlib.WriteOptions{}, []string{"id"}},
		{"IDNotCanonical", func(i *incidentlib.Incident) { i.ID = "IL-00213" }, incidentlib.WriteOptions{}, []string{"id"}},
		{"DateNotOnCalendar", func(i *incidentlib.Incident) { i.Date = "2023-02-30" }, incidentlib.WriteOptions{}, []string{"date"}},
		{"DateFormat", func(i *incidentlib.Incident) { i.Date = "2023/02/03" }, incidentlib.WriteOptions{}, []string{"date"}},
		{"DurationDoesNotParse", func(i *incidentlib.Incident) { i.Timeline.DetectedAfter = "soon" }, incidentlib.WriteOptions{}, []string{"timeline", "detected_after"}},
		{"DurationNegative", func(i *incidentlib.Incident) { i.Timeline.ResolvedAfter = "-3h" }, incidentlib.WriteOptions{}, []string{"timeline", "resolved_after"}},
		{"TermUnknown", func(i *incidentlib.Incident) { i.Domain = []string{"no-such-domain"} }, incidentlib.WriteOptions{}, []string{"domain", "0"}},
		{"TermOfAnotherKind", func(i *incidentlib.Incident) { i.Components = []string{"cache", "high-latency"} }, incidentlib.WriteOptions{}, []string{"components", "1"}},
		{"RootCauseOfAnotherKind", func(i *incidentlib.Incident) { i.RootCause = "high-latency" }, incidentlib.WriteOptions{}, []string{"root_cause"}},
		{"SeverityUnknown", func(i *incidentlib.Incident) { i.Severity = "sev9" }, incidentlib.WriteOptions{}, []string{"severity"}},
		{"RelatedSelf", func(i *incidentlib.Incident) { i.Related = []string{"IL-0001", "IL-0004"} }, incidentlib.WriteOptions{}, []string{"related", "1"}},
		{"RecurrenceOfSelf", func(i *incidentlib.Incident) { i.RecurrenceOf = "IL-0004" }, incidentlib.WriteOptions{}, []string{"recurrence_of"}},
		{"RelatedNotInLibrary", func(i *incidentlib.Incident) { i.Related = []string{"IL-0999"} }, incidentlib.WriteOptions{}, []string{"related", "0"}},
		{"RecurrenceOfNotInLibrary", func(i *incidentlib.Incident) { i.RecurrenceOf = "IL-0999" }, incidentlib.WriteOptions{}, []string{"recurrence_of"}},
		{"RecurrenceCycleOfTwo", func(i *incidentlib.Incident) {
			*i = *wrIncident("IL-0001", "Acme", "acme", "one")
			i.RecurrenceOf = "IL-0002"
		}, incidentlib.WriteOptions{}, []string{"recurrence_of"}},
		{"RecurrenceCycleOfThree", func(i *incidentlib.Incident) {
			*i = *wrIncident("IL-0001", "Acme", "acme", "one")
			i.RecurrenceOf = "IL-0003"
		}, incidentlib.WriteOptions{}, []string{"recurrence_of"}},
		{"URLRelative", func(i *incidentlib.Incident) { i.URL = "/cases/IL-0004" }, incidentlib.WriteOptions{}, []string{"url"}},
		{"URLNotHTTP", func(i *incidentlib.Incident) { i.URL = "ftp://example.com/post" }, incidentlib.WriteOptions{}, []string{"url"}},
		{"SourceURLWithoutScheme", func(i *incidentlib.Incident) { i.Sources = []incidentlib.Source{{URL: "example.com/post"}} }, incidentlib.WriteOptions{}, []string{"sources", "0", "url"}},
		{"ArchivedURLNotHTTP", func(i *incidentlib.Incident) {
			i.Sources = []incidentlib.Source{{URL: "https://example.com/post", Archived: "javascript:alert(1)"}}
		}, incidentlib.WriteOptions{}, []string{"sources", "0", "archived"}},
		{"TitleTooLong", func(i *incidentlib.Incident) { i.Title.En = strings.Repeat("a", incidentlib.MaxTitleLen+1) }, incidentlib.WriteOptions{}, []string{"title", "en"}},
		{"SummaryTooLong", func(i *incidentlib.Incident) { i.Summary.Ko = strings.Repeat("가", incidentlib.MaxTextLen+1) }, incidentlib.WriteOptions{}, []string{"summary", "ko"}},
		{"ActionItemTooLong", func(i *incidentlib.Incident) {
			i.ActionItems = []incidentlib.Item{{Text: incidentlib.Text{En: strings.Repeat("x", incidentlib.MaxItemLen+1)}}}
		}, incidentlib.WriteOptions{}, []string{"action_items", "0", "text", "en"}},
		{"TitleMissing", func(i *incidentlib.Incident) { i.Title = incidentlib.Text{} }, incidentlib.WriteOptions{}, []string{"title"}},
		{"OrgMissing", func(i *incidentlib.Incident) { i.Org = " " }, incidentlib.WriteOptions{}, []string{"org"}},
		{"OrgSlugMalformed", func(i *incidentlib.Incident) { i.OrgSlug = "Acme Inc" }, incidentlib.WriteOptions{}, []string{"org_slug"}},
		{"OrgSlugOfAnotherOrganization", func(i *incidentlib.Incident) { i.Org = "Acme Corporation" }, incidentlib.WriteOptions{}, []string{"org"}},
		{"OrgNameUnderAnotherSlug", func(i *incidentlib.Incident) { i.Org, i.OrgSlug = "ACME", "acme-corp" }, incidentlib.WriteOptions{}, []string{"org_slug"}},
		{"ReviewedAtGiven", func(i *incidentlib.Incident) { i.Review.ReviewedAt = "2026-01-01T00:00:00Z" }, incidentlib.WriteOptions{}, []string{"review", "reviewed_at"}},
		{"ReviewedByGiven", func(i *incidentlib.Incident) { i.Review.ReviewedBy = "kim" }, incidentlib.WriteOptions{}, []string{"review", "reviewed_by"}},
		{"ExpectedUpdatedAtMalformed", func(*incidentlib.Incident) {}, incidentlib.WriteOptions{ExpectedUpdatedAt: wrPtr("yesterday")}, []string{"expected_updated_at"}},
	}
	before := wrExport(t, db)
	seq := db.Incidents().Seq()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inc := wrIncident("IL-0004", "Acme", "acme", "four")
			c.edit(inc)
			_, err := db.Incidents().UpsertIncident(context.Background(), inc, c.opts)
			if code := incidentlib.ErrorCode(err); code != incidentlib.EINVALID {
				t.Fatalf("code %q (%v), want %s", code, err, incidentlib.EINVALID)
			}
			if !wrHasField(err, c.field) {
				t.Fatalf("no error names field %v: %v", c.field, incidentlib.ErrorList(err))
			}
			if db.Incidents().Seq() != seq || wrExport(t, db) != before {
				t.Fatal("a refused write changed the store")
			}
		})
	}
	wrClean(t, db)
}

func TestExpectedUpdatedAt(t *testing.T) {
	ctx := context.Background()
	db := wrOpen(t, false)
	first := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "v1"))
	second := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "v2"))
	cases := []struct {
		name     string
		id       string
		expected string
		want     string
	}{
		{"Stale", "IL-0001", first.UpdatedAt, incidentlib.ECONFLICT},
		{"MustNotExistButDoes", "IL-0001", "", incidentlib.ECONFLICT},
		{"ExpectedButGone", "IL-0002", second.UpdatedAt, incidentlib.ECONFLICT},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, seq := wrExport(t, db), db.Incidents().Seq()
			opts := incidentlib.WriteOptions{ExpectedUpdatedAt: &c.expected}
			_, err := db.Incidents().UpsertIncident(ctx, wrIncident(c.id, "Acme", "acme", "v3"), opts)
			if code := incidentlib.ErrorCode(err); code != c.want {
				t.Fatalf("upsert: code %q (%v), want %s", code, err, c.want)
			}
			if c.id == "IL-0001" {
				if _, err := wrReview(ctx, db, c.id, "kim", opts); incidentlib.ErrorCode(err) != c.want {
					t.Fatalf("review: %v, want %s", err, c.want)
				}
				if _, err := db.Incidents().DeleteIncident(ctx, c.id, opts); incidentlib.ErrorCode(err) != c.want {
					t.Fatalf("delete: %v, want %s", err, c.want)
				}
			}
			if db.Incidents().Seq() != seq || wrExport(t, db) != before {
				t.Fatal("a conflicting write changed the store")
			}
		})
	}
	t.Run("Current", func(t *testing.T) {
		got, err := db.Incidents().UpsertIncident(ctx, wrIncident("IL-0001", "Acme", "acme", "v3"), incidentlib.WriteOptions{ExpectedUpdatedAt: &second.UpdatedAt})
		if err != nil || got.Title.En != "v3" {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("CreateOnly", func(t *testing.T) {
		if _, err := db.Incidents().UpsertIncident(ctx, wrIncident("IL-0005", "Acme", "acme", "new"), incidentlib.WriteOptions{ExpectedUpdatedAt: wrPtr("")}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SameInstantOtherSpelling", func(t *testing.T) {
		cur := wrGet(t, db, "IL-0005")
		ts, _ := incidentlib.ParseTimestamp(cur.UpdatedAt)
		other := ts.In(time.FixedZone("KST", 9*3600)).Format(time.RFC3339Nano)
		if _, err := wrReview(ctx, db, "IL-0005", "kim", incidentlib.WriteOptions{ExpectedUpdatedAt: &other}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDeleteIncident(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *storage.DB {
		db := wrOpen(t, false)
		wrUpsert(t, db, wrIncident("IL-0002", "Globex", "globex", "target"))
		a := wrIncident("IL-0001", "Acme", "acme", "related to the target")
		a.Related = []string{"IL-0002"}
		wrUpsert(t, db, a)
		c := wrIncident("IL-0003", "Acme", "acme", "recurrence of the target")
		c.RecurrenceOf, c.Related = "IL-0002", []string{"IL-0001", "IL-0002"}
		wrUpsert(t, db, c)
		return db
	}
	t.Run("UnlinksOthers", func(t *testing.T) {
		db := setup(t)
		before := map[string]string{"IL-0001": wrGet(t, db, "IL-0001").UpdatedAt, "IL-0003": wrGet(t, db, "IL-0003").UpdatedAt}
		res, err := db.Incidents().DeleteIncident(ctx, "IL-0002", incidentlib.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Unlinked, []string{"IL-0001", "IL-0003"}) {
			t.Fatalf("unlinked %v", res.Unlinked)
		}
		if wrGet(t, db, "IL-0002") != nil {
			t.Fatal("the incident is still there")
		}
		a, c := wrGet(t, db, "IL-0001"), wrGet(t, db, "IL-0003")
		if len(a.Related) != 0 || c.RecurrenceOf != "" || !slices.Equal(c.Related, []string{"IL-0001"}) {
			t.Fatalf("links left: %v; %q %v", a.Related, c.RecurrenceOf, c.Related)
		}
		if a.UpdatedAt == before["IL-0001"] || c.UpdatedAt == before["IL-0003"] {
			t.Fatal("unlinked incidents were not stamped")
		}
		for _, f := range []incidentlib.IncidentFilter{
			{Organizations: []string{"globex"}}, {HasRecurrences: wrPtr(true)}, {IsRecurrence: wrPtr(true)}, {IDs: []string{"IL-0002"}},
		} {
			if n := wrCount(t, db, f); n != 0 {
				t.Errorf("filter %+v still finds %d incidents", f, n)
			}
		}
		if orgs, _ := db.Taxonomies().FindOrganizationsBySlugs(ctx, []string{"globex"}); orgs[0] != nil {
			t.Error("the organization without incidents is still listed")
		}
		wrClean(t, db)
		// The id is a tombstone: an upsert is refused, a restore brings it back.
		if _, err := db.Incidents().UpsertIncident(ctx, wrIncident("IL-0002", "Initech", "initech", "again"), incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("upsert of a deleted id: %v, want %s", err, incidentlib.ECONFLICT)
		}
		if _, err := db.Incidents().RestoreIncident(ctx, "IL-0002", 1, "", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		wrClean(t, db)
	})
	t.Run("NotFound", func(t *testing.T) {
		db := setup(t)
		if _, err := db.Incidents().DeleteIncident(ctx, "IL-0009", incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
			t.Fatalf("%v, want %s", err, incidentlib.ENOTFOUND)
		}
	})
	t.Run("MalformedID", func(t *testing.T) {
		db := setup(t)
		_, err := db.Incidents().DeleteIncident(ctx, "IL-2", incidentlib.WriteOptions{})
		if incidentlib.ErrorCode(err) != incidentlib.EINVALID || !wrHasField(err, []string{"id"}) {
			t.Fatalf("%v, want %s on id", err, incidentlib.EINVALID)
		}
	})
}

func TestReviewIncident(t *testing.T) {
	ctx := context.Background()
	db := wrOpen(t, false)
	first := wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "t"))
	t.Run("Reviewed", func(t *testing.T) {
		got, err := wrReview(ctx, db, "IL-0001", "Kim.Minji", incidentlib.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Review.ReviewedBy != "Kim.Minji" || got.Review.ReviewedAt == "" || got.UpdatedAt == first.UpdatedAt {
			t.Fatalf("review %+v, updated_at %s", got.Review, got.UpdatedAt)
		}
		if n := wrCount(t, db, incidentlib.IncidentFilter{Reviewed: wrPtr(true)}); n != 1 {
			t.Fatalf("reviewed index holds %d incidents, want 1", n)
		}
		wrClean(t, db)
	})
	for _, c := range []struct {
		name, id, reviewer, code string
		field                    []string
	}{
		{"NotFound", "IL-0002", "kim", incidentlib.ENOTFOUND, []string{"id"}},
		{"MalformedID", "0001", "kim", incidentlib.EINVALID, []string{"id"}},
		{"NotInReview", "IL-0001", "kim", incidentlib.EINVALIDSTATE, []string{"id"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := wrExport(t, db)
			_, err := wrReview(ctx, db, c.id, c.reviewer, incidentlib.WriteOptions{})
			if incidentlib.ErrorCode(err) != c.code || !wrHasField(err, c.field) {
				t.Fatalf("%v, want %s on %v", err, c.code, c.field)
			}
			if wrExport(t, db) != before {
				t.Fatal("a refused review changed the store")
			}
		})
	}
}

// TestStampedImportKeepsUnchanged: an import that stamps updated_at (the
// API's importIncidents) counts records that differ only in the stamp as
// unchanged, and leaves them alone.
func TestStampedImportKeepsUnchanged(t *testing.T) {
	ctx := context.Background()
	db := wrOpen(t, false)
	incs := []*incidentlib.Incident{wrIncident("IL-0001", "Acme", "acme", "a"), wrIncident("IL-0002", "Acme", "acme", "b")}
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	before := wrExport(t, db)
	incs[1] = wrIncident("IL-0002", "Acme", "acme", "b2")
	res, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged != 1 || res.Updated != 1 {
		t.Fatalf("result %+v, want 1 unchanged and 1 updated", res)
	}
	if strings.Split(wrExport(t, db), "\n")[0] != strings.Split(before, "\n")[0] {
		t.Fatal("the unchanged record was rewritten")
	}
}

// TestRolledBackWriteDoesNotPoisonCache: a write transaction that rolls
// back must not leave its records in the record cache, since its versions
// are given to the next writes.
func TestRolledBackWriteDoesNotPoisonCache(t *testing.T) {
	ctx := context.Background()
	db := wrOpen(t, false)
	x := wrIncident("IL-0001", "Acme", "acme", "x")
	x.RecurrenceOf = "IL-0002"
	y := wrIncident("IL-0002", "Acme", "acme", "y, rolled back")
	y.RecurrenceOf = "IL-0001"
	if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{x, y}, incidentlib.ImportOptions{}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
		t.Fatalf("a recurrence cycle was accepted: %v", err)
	}
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "x"))
	wrUpsert(t, db, wrIncident("IL-0002", "Acme", "acme", "y, committed"))
	if got := wrGet(t, db, "IL-0002"); got.Title.En != "y, committed" {
		t.Fatalf("read %q, a record of a rolled-back transaction", got.Title.En)
	}
}

// TestConcurrentWritesShareCommits: writes that meet share one commit
// (the group commit), every one is acknowledged only once committed,
// and the commits are observed.
func TestConcurrentWritesShareCommits(t *testing.T) {
	ctx := context.Background()
	var commits atomic.Int64
	db := wrOpenWith(t, storage.Options{ObserveCommit: func(time.Duration) { commits.Add(1) }})
	const writers = 16
	published := db.Incidents().SeqAbove(0)
	// Hold the write lock so that every writer queues: one waits alone
	// for the lock, the other writers-1 fill exactly one batch.
	db.Bolt().MaxBatchSize = writers - 1
	hold, err := db.Bolt().Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var acked atomic.Int64
	for i := range writers {
		wg.Go(func() {
			_, err := db.Incidents().UpsertIncident(ctx, wrIncident(incidentlib.FormatID(uint32(i+1)), "Acme", "acme", fmt.Sprint("w", i)), incidentlib.WriteOptions{})
			if err != nil {
				errs <- err
				return
			}
			acked.Add(1)
		})
	}
	wrWaitInFlight(t, db, writers)
	// Nothing can be acknowledged while the lock is held.
	if n := acked.Load(); n != 0 {
		t.Fatalf("%d writes acknowledged before any commit", n)
	}
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := commits.Load(); got != 2 {
		t.Fatalf("%d writes made %d commits, want 2 (one alone, one batch)", writers, got)
	}
	select {
	case <-published:
	default:
		t.Fatal("the commits woke no reader waiting on SeqAbove")
	}
	if db.Incidents().Seq() != writers {
		t.Fatalf("sequence %d after %d writes", db.Incidents().Seq(), writers)
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{}); n != writers {
		t.Fatalf("%d incidents stored, want %d", n, writers)
	}
	wrClean(t, db)
}

// TestConcurrentWritesWaitForNoTimer: writes that meet run as soon as
// the transaction before theirs ends, never waiting for a batch to fill
// (bbolt's Batch waits MaxBatchDelay): with the delay set to an hour,
// concurrent writers finish, sharing commits.
func TestConcurrentWritesWaitForNoTimer(t *testing.T) {
	ctx := context.Background()
	var commits atomic.Int64
	db := wrOpenWith(t, storage.Options{ObserveCommit: func(time.Duration) { commits.Add(1) }})
	db.Bolt().MaxBatchDelay = time.Hour
	const writers, each = 8, 25
	done := make(chan error, writers)
	for g := range writers {
		go func() {
			for i := range each {
				id := incidentlib.FormatID(uint32(g*each + i + 1))
				if _, err := db.Incidents().UpsertIncident(ctx, wrIncident(id, "Acme", "acme", "t"), incidentlib.WriteOptions{}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	hang := time.After(2 * time.Minute) // not a figure: a hang (a write waiting for the hour)
	for range writers {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-hang:
			t.Fatalf("concurrent writes still waiting after 2 minutes with MaxBatchDelay an hour: %d commits", commits.Load())
		}
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{}); n != writers*each {
		t.Fatalf("%d incidents stored, want %d", n, writers*each)
	}
	t.Logf("%d writes, %d commits", writers*each, commits.Load())
	wrClean(t, db)
}

// wrWaitInFlight waits until n writes wait for their transaction.
func wrWaitInFlight(tb testing.TB, db *storage.DB, n int) {
	tb.Helper()
	for db.Maintenance().StoreStats().WritesInFlight < n {
		time.Sleep(time.Millisecond)
	}
}

// TestBatchedFailureLeavesOthersWritten: a write refused inside a shared
// transaction does not take the others down with it.
func TestBatchedFailureLeavesOthersWritten(t *testing.T) {
	ctx := context.Background()
	db := wrOpen(t, false)
	wrUpsert(t, db, wrIncident("IL-0001", "Acme", "acme", "base"))
	db.Bolt().MaxBatchSize = 3
	hold, err := db.Bolt().Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]error, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			inc := wrIncident(incidentlib.FormatID(uint32(i+2)), "Acme", "acme", "ok")
			if i%2 == 1 {
				inc.Related = []string{"IL-0999"} // refused inside the transaction
			}
			_, results[i] = db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{})
		})
	}
	wrWaitInFlight(t, db, 4)
	hold.Rollback()
	wg.Wait()
	for i, err := range results {
		want := ""
		if i%2 == 1 {
			want = incidentlib.EINVALID
		}
		if got := incidentlib.ErrorCode(err); got != want {
			t.Errorf("write %d: code %q, want %q (%v)", i, got, want, err)
		}
	}
	if n := wrCount(t, db, incidentlib.IncidentFilter{}); n != 3 {
		t.Fatalf("%d incidents stored, want 3", n)
	}
	wrClean(t, db)
}

// wrChurner makes random writes over a generated corpus: edits that move
// terms, organizations, dates and links, new incidents, deletes and
// reviews. Refusals (a recurrence cycle, a vanished link) are expected;
// any other error fails the test.
type wrChurner struct {
	db   *storage.DB
	tax  *incidentlib.Taxonomy
	rng  *rand.Rand
	next uint32 // number of the next new incident
	max  uint32 // numbers are drawn from 1..max
}

func (c *wrChurner) pick(kind incidentlib.TermKind) string {
	terms := c.tax.Kind(kind)
	return terms[c.rng.IntN(len(terms))].Slug
}

func (c *wrChurner) randomID() string {
	return incidentlib.FormatID(uint32(c.rng.IntN(int(c.max))) + 1)
}

var wrOrgs = []struct{ name, slug string }{{"Acme", "acme"}, {"Globex", "globex"}, {"Initech", "initech"}, {"Hooli", "hooli"}}

func (c *wrChurner) step(tb testing.TB, i int) {
	ctx := context.Background()
	var err error
	switch r := c.rng.IntN(100); {
	case r < 55: // edit or create
		id := c.randomID()
		if r < 10 {
			id = incidentlib.FormatID(c.next)
			c.next++
			c.max = max(c.max, c.next-1)
		}
		inc := wrGet(tb, c.db, id)
		if inc == nil {
			inc = wrIncident(id, "Acme", "acme", "new")
		}
		inc.UpdatedAt, inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", "", ""
		inc.Title.En = fmt.Sprintf("edit %d", i)
		inc.Domain = []string{c.pick(incidentlib.KindDomain)}
		inc.Severity = c.pick(incidentlib.KindSeverity)
		if c.rng.IntN(3) == 0 {
			o := wrOrgs[c.rng.IntN(len(wrOrgs))]
			inc.Org, inc.OrgSlug = o.name, o.slug
		}
		inc.Date = ""
		if c.rng.IntN(4) > 0 {
			inc.Date = fmt.Sprintf("%d-%02d-%02d", 2006+c.rng.IntN(20), 1+c.rng.IntN(12), 1+c.rng.IntN(28))
		}
		inc.Related = nil
		for range c.rng.IntN(3) {
			if r := c.randomID(); r != id && !slices.Contains(inc.Related, r) {
				inc.Related = append(inc.Related, r)
			}
		}
		inc.RecurrenceOf = ""
		if r := c.randomID(); c.rng.IntN(3) == 0 && r != id {
			inc.RecurrenceOf = r
		}
		_, err = c.db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{})
	case r < 80:
		_, err = c.db.Incidents().DeleteIncident(ctx, c.randomID(), incidentlib.WriteOptions{})
	default:
		_, err = wrReview(ctx, c.db, c.randomID(), "reviewer", incidentlib.WriteOptions{})
	}
	if code := incidentlib.ErrorCode(err); err != nil && code != incidentlib.EINVALID && code != incidentlib.ENOTFOUND &&
		code != incidentlib.ECONFLICT && code != incidentlib.EINVALIDSTATE {
		tb.Fatalf("step %d: %v", i, err)
	}
}

func wrLoadCorpus(tb testing.TB, db *storage.DB, n int, seed int64) {
	tb.Helper()
	incs, err := gen.Generate(gen.Options{Count: n, Seed: seed, FirstID: 1, Taxonomy: db.Taxonomies().Taxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		tb.Fatal(err)
	}
}

// TestRandomWritesKeepCheckClean: after any sequence of upserts, deletes and
// reviews, sequential or concurrent, every index and link agrees with the
// records. fsync is off: durability is the crash test's business.
func TestRandomWritesKeepCheckClean(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	t.Run("Sequential", func(t *testing.T) {
		db := wrOpen(t, true)
		wrLoadCorpus(t, db, 150, 7)
		c := &wrChurner{db: db, tax: db.Taxonomies().Taxonomy(), rng: rand.New(rand.NewPCG(uint64(seed), 1)), next: 151, max: 150}
		for i := range 400 {
			c.step(t, i)
			if i%200 == 199 {
				wrClean(t, db)
			}
		}
		wrClean(t, db)
	})
	t.Run("Concurrent", func(t *testing.T) {
		db := wrOpen(t, true)
		wrLoadCorpus(t, db, 150, 8)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				// Each writer creates its own new ids; edits and deletes overlap.
				c := &wrChurner{db: db, tax: db.Taxonomies().Taxonomy(), rng: rand.New(rand.NewPCG(uint64(seed), uint64(g+2))), next: uint32(1000 * (g + 1)), max: 150}
				for i := range 80 {
					c.step(t, i)
				}
			})
		}
		wg.Wait()
		wrClean(t, db)
	})
}

// TestCompactAfterChurn: after heavy churn the file holds much free space;
// compaction brings it within twice the live data, keeps every record and
// passes check.
func TestCompactAfterChurn(t *testing.T) {
	db := wrOpen(t, true)
	wrLoadCorpus(t, db, 200, 9)
	c := &wrChurner{db: db, tax: db.Taxonomies().Taxonomy(), rng: rand.New(rand.NewPCG(9, 9)), next: 201, max: 200}
	for i := range 600 {
		c.step(t, i)
	}
	wrClean(t, db)
	live, err := db.Maintenance().Live(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := wrExport(t, db)
	path := db.Path()
	churned := wrFileSize(t, path)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := storage.Compact(path, path, storage.Options{Taxonomy: seeds.MustTaxonomy()}); err != nil {
		t.Fatal(err)
	}
	re, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	// The pages in use. Below bbolt's allocation step (16 MiB) the file
	// itself is grown to the next power of two, whatever the data.
	tx, err := re.Bolt().Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	compacted := tx.Size()
	tx.Rollback()
	t.Logf("%d incidents: records %d B, live keys and values %d B; file %d B after churn; compacted: %d B of pages, file %d B",
		live.Incidents, live.RecordBytes, live.KeyValueBytes, churned, compacted, wrFileSize(t, path))
	if compacted > 2*live.KeyValueBytes {
		t.Fatalf("compacted data is %d B, more than twice the live data (%d B)", compacted, live.KeyValueBytes)
	}
	if compacted >= churned {
		t.Fatalf("compaction did not shrink the file: %d B -> %d B", churned, compacted)
	}
	wrClean(t, re)
	if wrExport(t, re) != before {
		t.Fatal("compaction changed the records")
	}
}

func wrFileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// TestRecordCacheFollowsWrites: records read again at the same store
// sequence come from the record cache without a lookup, yet an upsert, an
// import and a delete are each seen by the next read.
func TestRecordCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	title := func(id string) string {
		t.Helper()
		got, err := db.Incidents().FindIncidentsByIDs(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] == nil {
			return "<none>"
		}
		return got[0].Title.En
	}
	for i, v := range []string{"v1", "v2", "v3"} {
		if _, err := db.Incidents().UpsertIncident(ctx, wrIncident("IL-0001", "Acme", "acme", v), incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for range 3 { // the second and third reads take the cached record
			if got := title("IL-0001"); got != v {
				t.Fatalf("write %d: read %q, want %q", i+1, got, v)
			}
		}
	}
	if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{wrIncident("IL-0001", "Acme", "acme", "v4")}, incidentlib.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := title("IL-0001"); got != "v4" {
		t.Fatalf("after an import: %q", got)
	}
	if _, err := db.Incidents().DeleteIncident(ctx, "IL-0001", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := title("IL-0001"); got != "<none>" {
		t.Fatalf("after a delete: %q", got)
	}
}
