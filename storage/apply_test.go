package storage_test

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// changesOf reads the whole change feed of db after since, in pages of
// limit.
func changesOf(tb testing.TB, db *storage.DB, since uint64, limit int) []incidentlib.Change {
	tb.Helper()
	var out []incidentlib.Change
	for {
		page, err := db.Incidents().ChangesSince(context.Background(), since, limit)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		since = page[len(page)-1].Seq
	}
}

// rpFollow applies every change of src after dst's position to dst, in
// pages of size, as a replica does.
func rpFollow(tb testing.TB, src, dst *storage.DB, size int) {
	tb.Helper()
	ctx := context.Background()
	for {
		pos, _, err := dst.Incidents().AppliedSeq(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		page, err := src.Incidents().ChangesSince(ctx, pos, size)
		if err != nil {
			tb.Fatal(err)
		}
		to, err := dst.Incidents().ApplyChanges(ctx, pos, page)
		if err != nil {
			tb.Fatal(err)
		}
		if len(page) > 0 && to != page[len(page)-1].Seq {
			tb.Fatalf("ApplyChanges returned position %d, want %d", to, page[len(page)-1].Seq)
		}
		if len(page) < size {
			return
		}
	}
}

// rpOpen opens a store without fsync: these tests are about what a
// transaction holds, not about durability, and fsync dominates their time.
func rpOpen(tb testing.TB) *storage.DB {
	tb.Helper()
	db, err := storage.Open(filepath.Join(tb.TempDir(), "replica.db"), storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 5000, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func rpIncident(id, org, slug, title string) *incidentlib.Incident {
	return &incidentlib.Incident{ID: id, Org: org, OrgSlug: slug, Title: incidentlib.Text{En: title}}
}

func rpUpsert(tb testing.TB, db *storage.DB, inc *incidentlib.Incident) {
	tb.Helper()
	if _, err := db.Incidents().UpsertIncident(context.Background(), inc, incidentlib.WriteOptions{}); err != nil {
		tb.Fatalf("upsert %s: %v", inc.ID, err)
	}
}

// rpGet reads one incident (a shared record: do not change it).
func rpGet(tb testing.TB, db *storage.DB, id string) *incidentlib.Incident {
	tb.Helper()
	incs, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{id})
	if err != nil || incs[0] == nil {
		tb.Fatalf("incident %s: %v", id, err)
	}
	return incs[0]
}

func rpSame(tb testing.TB, src, dst *storage.DB) {
	tb.Helper()
	a, b := export(tb, src), export(tb, dst)
	if !bytes.Equal(a, b) {
		tb.Fatalf("the replica's export differs from the primary's (%d and %d bytes)", len(a), len(b))
	}
	mustCheck(tb, dst)
	pos, following, err := dst.Incidents().AppliedSeq(context.Background())
	if err != nil || !following || pos != src.Incidents().Seq() {
		tb.Fatalf("replica position %d (following %v, err %v), want the primary's sequence %d", pos, following, err, src.Incidents().Seq())
	}
}

func TestApplyChangesCopiesAStore(t *testing.T) {
	ctx := context.Background()
	src, dst := rpOpen(t), rpOpen(t)
	if _, following, _ := dst.Incidents().AppliedSeq(ctx); following {
		t.Fatal("a new store follows nothing")
	}
	mustImport(t, src, corpus(t, 300, 3))
	rpFollow(t, src, dst, 97)
	rpSame(t, src, dst)

	// Edits, a delete that unlinks others, a review: all arrive.
	incs := corpus(t, 300, 3)
	edited := *incs[10]
	edited.Title.En = "An edited title"
	edited.UpdatedAt, edited.Review.ReviewedAt, edited.Review.ReviewedBy = "", "", ""
	if _, err := src.Incidents().UpsertIncident(ctx, &edited, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var linked string
	for _, inc := range incs {
		if len(inc.Related) > 0 {
			linked = inc.Related[0]
			break
		}
	}
	if _, err := src.Incidents().DeleteIncident(ctx, linked, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Incidents().WithdrawIncident(ctx, incs[20].ID, "a test", incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := dst.Incidents().Seq()
	rpFollow(t, src, dst, 1000)
	rpSame(t, src, dst)
	if dst.Incidents().Seq() == before {
		t.Fatal("applying changes did not move the replica's own sequence")
	}

	t.Run("NothingNew", func(t *testing.T) {
		seq := dst.Incidents().Seq()
		rpFollow(t, src, dst, 10)
		if dst.Incidents().Seq() != seq {
			t.Fatalf("an empty page wrote: sequence %d -> %d", seq, dst.Incidents().Seq())
		}
	})
}

func TestApplyChangesRefusesPagesThatDoNotFollowOn(t *testing.T) {
	ctx := context.Background()
	src, dst := rpOpen(t), rpOpen(t)
	mustImport(t, src, corpus(t, 50, 4))
	all := changesOf(t, src, 0, 100)
	if _, err := dst.Incidents().ApplyChanges(ctx, 0, all[:20]); err != nil {
		t.Fatal(err)
	}
	want := export(t, dst)
	pos := all[19].Seq
	bad := func(name, code string, from uint64, page []incidentlib.Change) {
		t.Run(name, func(t *testing.T) {
			to, err := dst.Incidents().ApplyChanges(ctx, from, page)
			if got := incidentlib.ErrorCode(err); got != code {
				t.Fatalf("code %q (%v), want %s", got, err, code)
			}
			if to != from {
				t.Fatalf("returned position %d after an error, want %d", to, from)
			}
			if got, _, _ := dst.Incidents().AppliedSeq(ctx); got != pos {
				t.Fatalf("position moved to %d", got)
			}
			if !bytes.Equal(export(t, dst), want) {
				t.Fatal("a refused page wrote")
			}
		})
	}
	bad("ErrPageAppliedTwice", incidentlib.ECONFLICT, 0, all[:20])
	bad("ErrGap", incidentlib.ECONFLICT, all[25].Seq, all[26:30])
	bad("ErrOverlap", incidentlib.EINVALID, pos, all[19:30])
	bad("ErrSeqNotIncreasing", incidentlib.EINVALID, pos, []incidentlib.Change{all[21], all[20]})
	unknownTerm := *all[20].Incident
	unknownTerm.Symptoms = []string{"no-such-symptom"}
	bad("ErrUnknownTerm", incidentlib.EINVALID, pos, []incidentlib.Change{{Seq: all[20].Seq, ID: all[20].ID, Incident: &unknownTerm}})
	bad("ErrRecordOfAnotherID", incidentlib.EINVALID, pos, []incidentlib.Change{{Seq: all[20].Seq, ID: all[21].ID, Incident: all[20].Incident}})
	bad("ErrNoRecord", incidentlib.EINVALID, pos, []incidentlib.Change{{Seq: all[20].Seq, ID: all[20].ID}})
	bad("ErrMalformedID", incidentlib.EINVALID, pos, []incidentlib.Change{{Seq: all[20].Seq, ID: "IL-1", Deleted: true}})
	t.Run("ErrContextDone", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := dst.Incidents().ApplyChanges(cctx, pos, all[20:]); err == nil {
			t.Fatal("applied with a cancelled context")
		}
		if got, _, _ := dst.Incidents().AppliedSeq(ctx); got != pos {
			t.Fatalf("position moved to %d", got)
		}
	})
}

func TestFollowPositionSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	src := rpOpen(t)
	mustImport(t, src, corpus(t, 120, 5))
	path := filepath.Join(t.TempDir(), "replica.db")
	open := func() *storage.DB {
		db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 100})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	dst := open()
	page, err := src.Incidents().ChangesSince(ctx, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Incidents().ApplyChanges(ctx, 0, page); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	dst = open()
	defer dst.Close()
	pos, following, err := dst.Incidents().AppliedSeq(ctx)
	if err != nil || !following || pos != page[49].Seq {
		t.Fatalf("after reopening: position %d following %v err %v, want %d", pos, following, err, page[49].Seq)
	}
	rpFollow(t, src, dst, 50)
	rpSame(t, src, dst)
}

// errAfter is a context that ends after its Err has been asked n times:
// a deadline that passes at a known point inside a transaction.
type errAfter struct {
	context.Context
	n atomic.Int32
}

func (c *errAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// A page whose context ends while it is applied (here at its 129th
// change) leaves the store and the position exactly as before; following
// on brings the replica level without gaps or duplicates.
func TestApplyChangesCancelledMidPageWritesNothing(t *testing.T) {
	ctx := context.Background()
	src, dst := rpOpen(t), rpOpen(t)
	mustImport(t, src, corpus(t, 200, 6))
	all := changesOf(t, src, 0, 5000)
	empty := export(t, dst)
	// Asked once before the transaction, once at change 0, then at 128.
	cctx := &errAfter{Context: ctx}
	cctx.n.Store(2)
	if _, err := dst.Incidents().ApplyChanges(cctx, 0, all); err == nil {
		t.Fatal("the page was applied although its context ended midway")
	}
	if cctx.n.Load() >= 0 {
		t.Fatal("the context was not asked midway through the page")
	}
	if pos, following, _ := dst.Incidents().AppliedSeq(ctx); pos != 0 || following {
		t.Fatalf("the cancelled page moved the position to %d", pos)
	}
	if !bytes.Equal(export(t, dst), empty) {
		t.Fatal("the cancelled page left records behind")
	}
	rpFollow(t, src, dst, 1000)
	rpSame(t, src, dst)
}

// The log keeps only each incident's latest change, so a page can hold a
// state the primary never had (here: two incidents under one org_slug with
// different names). The replica applies it; the next page makes it whole.
func TestApplyChangesTakesTransientStates(t *testing.T) {
	ctx := context.Background()
	src, dst := rpOpen(t), rpOpen(t)
	x := rpIncident("IL-0001", "Foo", "foo", "X")
	y := rpIncident("IL-0002", "Foo", "foo", "Y")
	rpUpsert(t, src, x)
	rpUpsert(t, src, y)
	rpFollow(t, src, dst, 100)
	// Y moves away, X is renamed, Y comes back under the new name.
	rpUpsert(t, src, rpIncident("IL-0002", "Bar", "bar", "Y"))
	rpUpsert(t, src, rpIncident("IL-0001", "Foo Inc", "foo", "X"))
	rpUpsert(t, src, rpIncident("IL-0002", "Foo Inc", "foo", "Y"))
	pos, _, _ := dst.Incidents().AppliedSeq(ctx)
	page := changesOf(t, src, pos, 100)
	if len(page) != 2 || page[0].ID != "IL-0001" {
		t.Fatalf("the log should hold X then Y, got %+v", page)
	}
	if _, err := dst.Incidents().ApplyChanges(ctx, pos, page[:1]); err != nil {
		t.Fatalf("the transient page was refused: %v", err)
	}
	rpFollow(t, src, dst, 100)
	rpSame(t, src, dst)
}

func TestUpstreamLinks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "up.db")
	open := func(upstream bool) *storage.DB {
		db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), UpstreamLinks: upstream})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	inc := rpIncident("IL-0001", "Foo", "foo", "X")
	inc.Related = []string{"IL-9001"}
	inc.RecurrenceOf = "IL-9002"

	t.Run("ErrWithoutUpstream", func(t *testing.T) {
		db := open(false)
		defer db.Close()
		_, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc}, incidentlib.ImportOptions{KeepUpdatedAt: true})
		if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("a link to an unknown incident was accepted: %v", err)
		}
		if _, err := db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("upsert: a link to an unknown incident was accepted: %v", err)
		}
	})
	t.Run("UpstreamLinksAccepted", func(t *testing.T) {
		db := open(true)
		defer db.Close()
		if _, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			t.Fatal(err)
		}
		other := rpIncident("IL-0002", "Foo", "foo", "Y")
		other.Related = []string{"IL-9003"}
		if _, err := db.Incidents().UpsertIncident(ctx, other, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		self := rpIncident("IL-0003", "Foo", "foo", "Z")
		self.RecurrenceOf = "IL-0003"
		if _, err := db.Incidents().UpsertIncident(ctx, self, incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("a link to the record itself was accepted: %v", err)
		}
		mustCheck(t, db)
		links, err := db.Incidents().UpstreamLinks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []storage.Link{{"IL-0001", "recurrence_of", "IL-9002"}, {"IL-0001", "related", "IL-9001"}, {"IL-0002", "related", "IL-9003"}}
		if len(links) != len(want) {
			t.Fatalf("upstream links %v, want %v", links, want)
		}
		for i := range want {
			if links[i] != want[i] {
				t.Fatalf("upstream links %v, want %v", links, want)
			}
		}
	})
	t.Run("DanglingWithoutUpstream", func(t *testing.T) {
		db := open(false)
		defer db.Close()
		problems, err := db.Maintenance().Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 3 || !strings.Contains(strings.Join(problems, "\n"), "dangling link") {
			t.Fatalf("check without the upstream should report 3 dangling links, got %v", problems)
		}
	})
}

func TestRecordSourceChecks(t *testing.T) {
	ctx := context.Background()
	db := rpOpen(t)
	incs := corpus(t, 200, 7)
	mustImport(t, db, incs)
	before := export(t, db)
	target := incs[3]
	url := target.Sources[0].URL
	citing := 0
	for _, inc := range incs {
		for _, s := range inc.Sources {
			if s.URL == url {
				citing++
				break
			}
		}
	}
	check := incidentlib.SourceCheck{Status: 200, CheckedAt: "2026-11-30T12:00:00Z", FinalURL: url + "/moved"}
	seq := db.Incidents().Seq()
	n, err := db.Incidents().RecordSourceChecks(ctx, []string{target.ID, "IL-0001", "IL-99999"}, map[string]incidentlib.SourceCheck{url: check})
	if err != nil || n != 1 {
		t.Fatalf("RecordSourceChecks wrote %d incidents (err %v), want 1", n, err)
	}
	got := rpGet(t, db, target.ID)
	c, ok := got.Sources[0].Check()
	if !ok || c != check {
		t.Fatalf("recorded check %+v (%v), want %+v", c, ok, check)
	}
	if got.UpdatedAt != target.UpdatedAt || got.Review.ReviewedAt != target.Review.ReviewedAt {
		t.Fatalf("a link check changed updated_at or the review: %s %+v", got.UpdatedAt, got.Review)
	}
	for i := 1; i < len(got.Sources); i++ {
		if _, ok := got.Sources[i].Check(); ok {
			t.Fatalf("source %d was not checked but records a check", i)
		}
	}
	if db.Incidents().Seq() == seq {
		t.Fatal("the check was not logged as a change")
	}
	if page := changesOf(t, db, seq, 10); len(page) != 1 || page[0].ID != target.ID {
		t.Fatalf("change log after the check: %+v", page)
	}
	mustCheck(t, db)

	t.Run("RoundTripIsByteIdentical", func(t *testing.T) {
		first := export(t, db)
		if bytes.Equal(first, before) || !bytes.Contains(first, []byte(`"checked_at":"2026-11-30T12:00:00Z","final_url":"`+url+`/moved","status":200}`)) {
			t.Fatal("the export does not carry the check as source fields")
		}
		recs, err := importer.ReadRecords("export", first)
		if err != nil {
			t.Fatal(err)
		}
		again := rpOpen(t)
		all := make([]*incidentlib.Incident, len(recs))
		for i, r := range recs {
			all[i] = r.Incident
		}
		mustImport(t, again, all)
		if !bytes.Equal(export(t, again), first) {
			t.Fatal("export, import, export is not byte-identical with link checks")
		}
	})
	t.Run("NoResponseDropsFinalURL", func(t *testing.T) {
		nc := incidentlib.SourceCheck{Status: 0, CheckedAt: "2026-12-01T00:00:00Z"}
		if _, err := db.Incidents().RecordSourceChecks(ctx, []string{target.ID}, map[string]incidentlib.SourceCheck{url: nc}); err != nil {
			t.Fatal(err)
		}
		c, ok := rpGet(t, db, target.ID).Sources[0].Check()
		if !ok || c != nc {
			t.Fatalf("recorded %+v, want %+v", c, nc)
		}
	})
	t.Run("SourceURLs", func(t *testing.T) {
		urls, err := db.Incidents().SourceURLs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(urls[url]) != citing || !slices.Contains(urls[url], target.ID) {
			t.Fatalf("SourceURLs[%s] = %v, want %d incidents", url, urls[url], citing)
		}
	})
}

func TestSeqAbove(t *testing.T) {
	db := rpOpen(t)
	ch := db.Incidents().SeqAbove(db.Incidents().Seq())
	select {
	case <-ch:
		t.Fatal("closed before any write")
	default:
	}
	rpUpsert(t, db, rpIncident("IL-0001", "Foo", "foo", "X"))
	<-ch // closed by the commit; a hang fails the test by its timeout
	select {
	case <-db.Incidents().SeqAbove(0):
	default:
		t.Fatal("SeqAbove of a sequence already passed is not closed")
	}
}
