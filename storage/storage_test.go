package storage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// MustOpenDB opens a store in a temporary directory, closed at the end of
// the test.
func MustOpenDB(tb testing.TB) *storage.DB {
	tb.Helper()
	db, err := storage.Open(filepath.Join(tb.TempDir(), "test.db"), storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// corpus generates n incidents deterministically.
func corpus(tb testing.TB, n int, seed int64) []*incidentlib.Incident {
	tb.Helper()
	incs, err := gen.Generate(gen.Options{Count: n, Seed: seed, FirstID: 1000, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		tb.Fatal(err)
	}
	return incs
}

func mustImport(tb testing.TB, db *storage.DB, incs []*incidentlib.Incident) {
	tb.Helper()
	if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		tb.Fatal(err)
	}
}

func export(tb testing.TB, db *storage.DB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := db.Maintenance().Export(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func mustCheck(tb testing.TB, db *storage.DB) {
	tb.Helper()
	problems, err := db.Maintenance().Check(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if len(problems) > 0 {
		tb.Fatalf("check found %d problems: %v", len(problems), problems[:min(len(problems), 10)])
	}
}

func TestSeedRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	incs, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	mustImport(t, db, incs)
	mustCheck(t, db)
	got, err := db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0213", "IL-9999", "bogus"})
	if err != nil {
		t.Fatal(err)
	}
	if got[1] != nil || got[2] != nil {
		t.Fatalf("unknown and malformed ids must give nil, got %v %v", got[1], got[2])
	}
	// The stored record is the seed file, field for field (compared as JSON values).
	raw, err := seeds.File("incidents/000-roblox-consul.json")
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := json.Marshal(got[0])
	var want, have any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stored, &have); err != nil {
		t.Fatal(err)
	}
	wb, _ := json.Marshal(want)
	hb, _ := json.Marshal(have)
	if !bytes.Equal(wb, hb) {
		t.Fatalf("the stored seed record differs from the seed file:\nwant %s\nhave %s", wb, hb)
	}
	if got[0].Title.Ko == "" || got[0].Title.En == "" || len(got[0].Remediation) != 10 {
		t.Fatalf("seed record lost content: %+v", got[0].Title)
	}
}

func TestUnknownFieldsSurvive(t *testing.T) {
	db := MustOpenDB(t)
	rec := `{"id":"IL-0001","org":"Example","org_slug":"example","title":{"en":"T","ja":"タイトル"},"x_custom":{"a":[1,2]},` +
		`"impact":{"scope":"s","extra_impact":true},"sources":[{"url":"https://example.com/a","kind":"blog","checked":"yes"}]}`
	recs, err := importer.ReadRecords("rec.json", []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	mustImport(t, db, []*incidentlib.Incident{recs[0].Incident})
	out := export(t, db)
	for _, want := range []string{`"ja":"タイトル"`, `"x_custom":{"a":[1,2]}`, `"extra_impact":true`, `"checked":"yes"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("export lost %s: %s", want, out)
		}
	}
}

func TestImportExportRoundTripIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	incs := corpus(t, 500, 7)
	seedIncs, _ := seeds.Incidents()
	mustImport(t, db, append(incs, seedIncs...))
	first := export(t, db)

	recs, err := importer.ReadRecords("export.jsonl", first)
	if err != nil {
		t.Fatal(err)
	}
	db2 := MustOpenDB(t)
	var again []*incidentlib.Incident
	for _, r := range recs {
		again = append(again, r.Incident)
	}
	res, err := db2.Incidents().ImportIncidents(ctx, again, incidentlib.ImportOptions{KeepUpdatedAt: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != len(again) {
		t.Fatalf("created %d of %d", res.Created, len(again))
	}
	second := export(t, db2)
	if !bytes.Equal(first, second) {
		t.Fatal("export, import, export is not byte-identical")
	}
	// Importing the same again changes nothing.
	res, err = db2.Incidents().ImportIncidents(ctx, again, incidentlib.ImportOptions{KeepUpdatedAt: true})
	if err != nil || res.Unchanged != len(again) {
		t.Fatalf("re-import: %+v, %v", res, err)
	}
	mustCheck(t, db2)
}

func TestBadImportWritesNothing(t *testing.T) {
	ctx := context.Background()
	valid := func(id string) *incidentlib.Incident {
		return &incidentlib.Incident{ID: id, Org: "Example", OrgSlug: "example", Title: incidentlib.Text{En: "t " + id}}
	}
	cases := []struct {
		name   string
		mutate func(*incidentlib.Incident)
		field  string
	}{
		{"BadID", func(i *incidentlib.Incident) { i.ID = "IL-12" }, "id"},
		{"BadDate", func(i *incidentlib.Incident) { i.Date = "2021-02-30" }, "date"},
		{"BadDuration", func(i *incidentlib.Incident) { i.Timeline.ResolvedAfter = "3 hours" }, "timeline"},
		{"UnknownTerm", func(i *incidentlib.Incident) { i.Symptoms = []string{"no-such-symptom"} }, "symptoms"},
		{"TermOfOtherKind", func(i *incidentlib.Incident) { i.RootCause = "high-latency" }, "root_cause"},
		{"RelatedSelf", func(i *incidentlib.Incident) { i.Related = []string{i.ID} }, "related"},
		{"DanglingRelated", func(i *incidentlib.Incident) { i.Related = []string{"IL-9999"} }, "related"},
		{"RecurrenceCycle", func(i *incidentlib.Incident) { i.RecurrenceOf = "IL-0011" }, "recurrence_of"},
		{"RelativeURL", func(i *incidentlib.Incident) { i.Sources = []incidentlib.Source{{URL: "/relative"}} }, "sources"},
		{"NoTitle", func(i *incidentlib.Incident) { i.Title = incidentlib.Text{} }, "title"},
		{"OrgSlugReused", func(i *incidentlib.Incident) { i.Org = "Another Name" }, "org"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := MustOpenDB(t)
			base := valid("IL-0011")
			mustImport(t, db, []*incidentlib.Incident{base})
			before := export(t, db)
			seq := db.Incidents().Seq()
			// IL-0012 recurs IL-0011; the bad record is IL-0013 (or IL-0011 for the cycle).
			r2 := valid("IL-0012")
			r2.RecurrenceOf = "IL-0011"
			bad := valid("IL-0013")
			if c.name == "RecurrenceCycle" {
				bad = valid("IL-0011")
				bad.RecurrenceOf = "IL-0012"
			} else {
				c.mutate(bad)
			}
			ok := valid("IL-0014")
			_, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{ok, r2, bad}, incidentlib.ImportOptions{KeepUpdatedAt: true})
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("want EINVALID, got %v", err)
			}
			list := incidentlib.ErrorList(err)
			if len(list) == 0 || len(list[0].Field) < 3 || list[0].Field[0] != "records" || list[0].Field[2] != c.field {
				t.Fatalf("the error must name the record and field %q: %+v", c.field, list)
			}
			if after := export(t, db); !bytes.Equal(before, after) || db.Incidents().Seq() != seq {
				t.Fatal("a failed import changed the store")
			}
			mustCheck(t, db)
		})
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	tax := seeds.MustTaxonomy()
	db, err := storage.Open(path, storage.Options{Taxonomy: tax})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, err = storage.Open(path, storage.Options{Taxonomy: tax, OpenTimeout: 100 * time.Millisecond})
	if !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("want ErrLocked, got %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("the second open hung")
	}
}

func TestFreelistOptions(t *testing.T) {
	db := MustOpenDB(t)
	b := db.Bolt()
	if !b.NoFreelistSync || b.FreelistType != bolt.FreelistMapType {
		t.Fatalf("the store must use the hashmap freelist without freelist sync, got %v %v", b.FreelistType, b.NoFreelistSync)
	}
}

// brute evaluates a filter over the records themselves.
func brute(incs []*incidentlib.Incident, f incidentlib.IncidentFilter) []*incidentlib.Incident {
	in := func(list []string, v ...string) bool {
		if len(list) == 0 {
			return true
		}
		for _, x := range v {
			if slices.Contains(list, x) {
				return true
			}
		}
		return false
	}
	hasRec := map[string]bool{}
	for _, i := range incs {
		if i.RecurrenceOf != "" {
			hasRec[i.RecurrenceOf] = true
		}
	}
	var out []*incidentlib.Incident
	for _, i := range incs {
		ok := in(f.IDs, i.ID) && in(f.Organizations, i.OrgSlug) && in(f.Domains, i.Domain...) &&
			in(f.Symptoms, i.Symptoms...) && in(f.Components, i.Components...) && in(f.RootCauses, i.RootCause) &&
			in(f.Contributing, i.Contributing...) && in(f.Severities, i.Severity)
		if f.DateFrom != nil && (i.Date == "" || i.Date < *f.DateFrom) {
			ok = false
		}
		if f.DateTo != nil && (i.Date == "" || i.Date > *f.DateTo) {
			ok = false
		}
		if f.UpdatedSince != nil {
			u, _ := time.Parse(time.RFC3339Nano, i.UpdatedAt)
			s, _ := time.Parse(time.RFC3339Nano, *f.UpdatedSince)
			if u.Before(s) {
				ok = false
			}
		}
		if f.Reviewed != nil && (i.Review.ReviewedAt != "") != *f.Reviewed {
			ok = false
		}
		if f.IsRecurrence != nil && (i.RecurrenceOf != "") != *f.IsRecurrence {
			ok = false
		}
		if f.HasRecurrences != nil && hasRec[i.ID] != *f.HasRecurrences {
			ok = false
		}
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// sortBrute orders incidents as the store must.
func sortBrute(incs []*incidentlib.Incident, o incidentlib.IncidentOrder) {
	num := func(i *incidentlib.Incident) uint32 { n, _ := incidentlib.ParseID(i.ID); return n }
	val := func(i *incidentlib.Incident) (string, bool) {
		switch o.Field {
		case incidentlib.OrderUpdatedAt:
			if i.UpdatedAt == "" {
				return "", false
			}
			t, _ := time.Parse(time.RFC3339Nano, i.UpdatedAt)
			return fmt.Sprintf("%020d", t.UnixNano()), true
		case incidentlib.OrderID:
			return fmt.Sprintf("%010d", num(i)), true
		}
		return i.Date, i.Date != ""
	}
	sort.SliceStable(incs, func(a, b int) bool {
		va, oka := val(incs[a])
		vb, okb := val(incs[b])
		if oka != okb {
			return oka
		}
		if va != vb && oka {
			if o.Direction == incidentlib.Desc {
				return va > vb
			}
			return va < vb
		}
		return num(incs[a]) < num(incs[b])
	})
}

func ptr[T any](v T) *T { return &v }

func filterCases(incs []*incidentlib.Incident) map[string]incidentlib.IncidentFilter {
	// Take real values from the corpus so filters match something.
	a, b := incs[3], incs[42]
	return map[string]incidentlib.IncidentFilter{
		"None":             {},
		"Org":              {Organizations: []string{a.OrgSlug}},
		"TwoOrgs":          {Organizations: []string{a.OrgSlug, b.OrgSlug}},
		"Symptom":          {Symptoms: []string{a.Symptoms[0]}},
		"SymptomAndComp":   {Symptoms: []string{a.Symptoms[0], b.Symptoms[0]}, Components: []string{a.Components[0]}},
		"RootCauseSev":     {RootCauses: []string{a.RootCause}, Severities: []string{b.Severity}},
		"Domain":           {Domains: []string{a.Domain[0]}},
		"NoMatchSlug":      {Symptoms: []string{"no-such-symptom"}},
		"DateRange":        {DateFrom: ptr("2010-03-15"), DateTo: ptr("2014-07-01")},
		"DateFrom":         {DateFrom: ptr("2021-06-30")},
		"DateTo":           {DateTo: ptr("2008-01-01")},
		"DateAndOrg":       {DateFrom: ptr("2009-01-01"), Organizations: []string{a.OrgSlug}},
		"Reviewed":         {Reviewed: ptr(true)},
		"Unreviewed":       {Reviewed: ptr(false), Symptoms: []string{a.Symptoms[0]}},
		"IsRecurrence":     {IsRecurrence: ptr(true)},
		"HasRecurrences":   {HasRecurrences: ptr(true)},
		"NotHasRecurrence": {HasRecurrences: ptr(false), IsRecurrence: ptr(false)},
		"UpdatedSince":     {UpdatedSince: ptr("2025-06-01T00:00:00Z")},
		"IDs":              {IDs: []string{a.ID, b.ID, "IL-99999", "nonsense"}},
		"Contributing":     {Contributing: []string{a.Contributing[0]}},
	}
}

func TestFiltersMatchBruteForce(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	incs := corpus(t, 2000, 11)
	mustImport(t, db, incs)
	for name, f := range filterCases(incs) {
		t.Run(name, func(t *testing.T) {
			want := brute(incs, f)
			n, err := db.Incidents().CountIncidents(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(want) {
				t.Fatalf("count %d, brute force %d", n, len(want))
			}
			// Facets and years against brute force.
			facets, err := db.Incidents().Facets(ctx, f, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, facet := range facets {
				for _, tc := range facet.Counts {
					c := 0
					for _, i := range want {
						if slices.Contains(i.Terms(), incidentlib.TermKey{Kind: facet.Kind, Slug: tc.Term.Slug}) {
							c++
						}
					}
					if c != tc.Count {
						t.Fatalf("facet %s:%s = %d, brute force %d", facet.Kind, tc.Term.Slug, tc.Count, c)
					}
				}
			}
			years, err := db.Incidents().Years(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			byYear := map[int]int{}
			for _, i := range want {
				if i.Date != "" {
					byYear[int((i.Date[0]-'0'))*1000+int(i.Date[1]-'0')*100+int(i.Date[2]-'0')*10+int(i.Date[3]-'0')]++
				}
			}
			if len(years) != len(byYear) {
				t.Fatalf("years %v, brute force %v", years, byYear)
			}
			for _, y := range years {
				if byYear[y.Year] != y.Count {
					t.Fatalf("year %d = %d, brute force %d", y.Year, y.Count, byYear[y.Year])
				}
			}
		})
	}
}

// walk pages through a filter in one order, forward or backward, and
// returns the ids in order.
func walk(t *testing.T, db *storage.DB, f incidentlib.IncidentFilter, o incidentlib.IncidentOrder, size int, backward bool) ([]string, int) {
	t.Helper()
	ctx := context.Background()
	var ids []string
	var cursor *string
	total := -1
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("pagination does not end")
		}
		var p incidentlib.PageArgs
		if backward {
			p = incidentlib.PageArgs{Last: &size, Before: cursor}
		} else {
			p = incidentlib.PageArgs{First: &size, After: cursor}
		}
		page, err := db.Incidents().FindIncidents(ctx, f, o, p)
		if err != nil {
			t.Fatal(err)
		}
		if total >= 0 && page.TotalCount != total {
			t.Fatalf("totalCount changed from %d to %d", total, page.TotalCount)
		}
		total = page.TotalCount
		if backward {
			ids = append(append([]string(nil), page.IDs...), ids...)
			if cursor != nil && !page.HasNextPage {
				t.Fatal("a page before a cursor must have a next page")
			}
			if !page.HasPreviousPage {
				return ids, total
			}
			cursor = &page.Cursors[0]
		} else {
			ids = append(ids, page.IDs...)
			if cursor != nil && !page.HasPreviousPage {
				t.Fatal("a page after a cursor must have a previous page")
			}
			if !page.HasNextPage {
				return ids, total
			}
			cursor = &page.Cursors[len(page.Cursors)-1]
		}
		if len(page.IDs) != size {
			t.Fatalf("a page that is not the last has %d items, want %d", len(page.IDs), size)
		}
	}
}

func TestPaginationVisitsEveryIncidentOnce(t *testing.T) {
	for _, path := range []struct {
		name  string
		small int
	}{{"InMemory", 1 << 30}, {"OrderIndex", 0}} {
		t.Run(path.name, func(t *testing.T) {
			defer storage.SetSmallSet(path.small)()
			testPagination(t)
		})
	}
}

func testPagination(t *testing.T) {
	db := MustOpenDB(t)
	incs := corpus(t, 1000, 5)
	mustImport(t, db, incs)
	orders := []incidentlib.IncidentOrder{
		{Field: incidentlib.OrderDate, Direction: incidentlib.Desc},
		{Field: incidentlib.OrderDate, Direction: incidentlib.Asc},
		{Field: incidentlib.OrderUpdatedAt, Direction: incidentlib.Desc},
		{Field: incidentlib.OrderUpdatedAt, Direction: incidentlib.Asc},
		{Field: incidentlib.OrderID, Direction: incidentlib.Desc},
		{Field: incidentlib.OrderID, Direction: incidentlib.Asc},
	}
	filters := filterCases(incs)
	for _, fname := range []string{"None", "Symptom", "DateRange", "Org", "IsRecurrence"} {
		f := filters[fname]
		want := brute(incs, f)
		for _, o := range orders {
			for _, backward := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s_%s/backward=%v", fname, o.Field, o.Direction, backward)
				t.Run(name, func(t *testing.T) {
					sorted := append([]*incidentlib.Incident(nil), want...)
					sortBrute(sorted, o)
					wantIDs := make([]string, len(sorted))
					for i, inc := range sorted {
						wantIDs[i] = inc.ID
					}
					size := 37
					if fname == "None" {
						size = 100
					}
					got, total := walk(t, db, f, o, size, backward)
					if total != len(want) {
						t.Fatalf("totalCount %d, want %d", total, len(want))
					}
					if !slices.Equal(got, wantIDs) {
						for i := range min(len(got), len(wantIDs)) {
							if got[i] != wantIDs[i] {
								t.Fatalf("order differs at %d: got %s want %s (of %d/%d)", i, got[i], wantIDs[i], len(got), len(wantIDs))
							}
						}
						t.Fatalf("got %d ids, want %d", len(got), len(wantIDs))
					}
				})
			}
		}
	}
}

func TestPageArgumentErrors(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	mustImport(t, db, corpus(t, 50, 1))
	o := incidentlib.DefaultOrder
	for name, c := range map[string]struct {
		p    incidentlib.PageArgs
		code string
	}{
		"FirstOver100":     {incidentlib.PageArgs{First: ptr(101)}, incidentlib.EINVALID},
		"NegativeFirst":    {incidentlib.PageArgs{First: ptr(-1)}, incidentlib.EINVALID},
		"FirstAndLast":     {incidentlib.PageArgs{First: ptr(1), Last: ptr(1)}, incidentlib.EINVALID},
		"ErrCursorGarbage": {incidentlib.PageArgs{After: ptr("%%%not base64")}, incidentlib.EBADCURSOR},
		"ErrCursorShort":   {incidentlib.PageArgs{After: ptr("AQ")}, incidentlib.EBADCURSOR},
		"ErrCursorOrder":   {incidentlib.PageArgs{After: ptr("AUkAAAAB")}, incidentlib.EBADCURSOR},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := db.Incidents().FindIncidents(ctx, incidentlib.IncidentFilter{}, o, c.p)
			if got := incidentlib.ErrorCode(err); got != c.code {
				t.Fatalf("want %s, got %v", c.code, err)
			}
		})
	}
	t.Run("BadDateFilter", func(t *testing.T) {
		_, err := db.Incidents().FindIncidents(ctx, incidentlib.IncidentFilter{DateFrom: ptr("2020-13-01")}, o, incidentlib.PageArgs{})
		if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
			t.Fatalf("want EINVALID, got %v", err)
		}
	})
}

func TestCheckFindsBrokenIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "broken.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	incs := corpus(t, 200, 3)
	mustImport(t, db, incs)
	mustCheck(t, db)
	// Break each index kind in turn, behind the store's back.
	breakers := map[string]func(tx *bolt.Tx) error{
		"PostingMissingEntry": func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("postings"))
			k := []byte("t\x00symptom\x00" + incs[0].Symptoms[0])
			return b.Put(k, []byte{}) // an empty, undecodable bitmap
		},
		"OrderKeyDeleted": func(tx *bolt.Tx) error {
			c := tx.Bucket([]byte("orders")).Cursor()
			k, _ := c.First()
			return tx.Bucket([]byte("orders")).Delete(append([]byte(nil), k...))
		},
		"ReverseLinkStale": func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("relatedrev")).Put([]byte{0, 0, 0, 1, 0, 0, 0, 2}, nil)
		},
	}
	for name, brk := range breakers {
		t.Run(name, func(t *testing.T) {
			snapshot := filepath.Join(dir, name+".db")
			f, err := createFile(snapshot)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Maintenance().Backup(ctx, f); err != nil {
				t.Fatal(err)
			}
			f.Close()
			copyDB, err := storage.Open(snapshot, storage.Options{Taxonomy: seeds.MustTaxonomy()})
			if err != nil {
				t.Fatal(err)
			}
			defer copyDB.Close()
			if err := copyDB.Bolt().Update(brk); err != nil {
				t.Fatal(err)
			}
			problems, err := copyDB.Maintenance().Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 {
				t.Fatal("check did not find the broken index")
			}
		})
	}
	db.Close()
}

func TestSimilarRanking(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	mk := func(id, org string, symptoms, components []string, rc string) *incidentlib.Incident {
		return &incidentlib.Incident{ID: id, Org: org, OrgSlug: org, Title: incidentlib.Text{En: id},
			Symptoms: symptoms, Components: components, RootCause: rc, Severity: "unknown"}
	}
	// monitoring-down is rare (2 incidents), high-latency is common (6).
	incs := []*incidentlib.Incident{
		mk("IL-0001", "alpha", []string{"high-latency", "monitoring-down"}, []string{"cache"}, "software-bug"),
		mk("IL-0002", "beta", []string{"high-latency", "monitoring-down"}, nil, "config-change"),      // shares the rare term + common
		mk("IL-0003", "gamma", []string{"high-latency"}, []string{"cache"}, "software-bug"),           // common + cache + rc
		mk("IL-0004", "alpha", []string{"high-latency"}, nil, "config-change"),                        // common + same org
		mk("IL-0005", "delta", []string{"high-latency"}, nil, "config-change"),                        // common only
		mk("IL-0006", "delta", []string{"high-latency"}, nil, "config-change"),                        // common only
		mk("IL-0007", "delta", []string{"service-unavailable"}, nil, "config-change"),                 // nothing shared
		mk("IL-0008", "epsilon", []string{"service-unavailable"}, []string{"cache"}, "config-change"), // cache only
	}
	mustImport(t, db, incs)
	sims, err := db.Incidents().Similar(ctx, "IL-0001", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sims {
		if s.ID == "IL-0001" {
			t.Fatal("similar returned the incident itself")
		}
		got = append(got, s.ID)
	}
	// IL-0003 shares three terms (one rare-ish: cache 3/8, software-bug 2/8);
	// IL-0002 shares the rare monitoring-down; IL-0004 the org.
	want := []string{"IL-0003", "IL-0002", "IL-0004", "IL-0008", "IL-0005", "IL-0006"}
	if !slices.Equal(got, want) {
		t.Fatalf("ranking %v, want %v (scores %+v)", got, want, sims)
	}
	if !sims[2].SameOrganization || sims[0].SameOrganization {
		t.Fatalf("sameOrganization wrong: %+v", sims)
	}
	if _, err := db.Incidents().Similar(ctx, "IL-0999", 5); incidentlib.ErrorCode(err) != incidentlib.ENOTFOUND {
		t.Fatalf("want ENOTFOUND, got %v", err)
	}
}

// Random order of inputs gives the same store.
func TestImportOrderDoesNotMatter(t *testing.T) {
	incs := corpus(t, 300, 9)
	a := MustOpenDB(t)
	mustImport(t, a, incs)
	shuffled := append([]*incidentlib.Incident(nil), incs...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b := MustOpenDB(t)
	mustImport(t, b, shuffled)
	if !bytes.Equal(export(t, a), export(t, b)) {
		t.Fatal("import order changed the export")
	}
	mustCheck(t, b)
}

func createFile(path string) (*os.File, error) { return os.Create(path) }

func TestMergedIDKeepsResolving(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	mk := func(id string, related ...string) *incidentlib.Incident {
		return &incidentlib.Incident{ID: id, Org: "Example", OrgSlug: "example", Title: incidentlib.Text{En: id}, Related: related}
	}
	mustImport(t, db, []*incidentlib.Incident{mk("IL-0001"), mk("IL-0002"), mk("IL-0003", "IL-0002")})
	// IL-0002 turns out to be IL-0001: merge it away.
	_, err := db.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{mk("IL-0001")},
		incidentlib.ImportOptions{KeepUpdatedAt: true, Merges: map[string]string{"IL-0002": "IL-0001"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Incidents().FindIncidentsByIDs(ctx, []string{"IL-0002", "IL-0003"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] == nil || got[0].ID != "IL-0001" {
		t.Fatalf("the merged-away id must resolve to IL-0001, got %+v", got[0])
	}
	if !slices.Equal(got[1].Related, []string{"IL-0001"}) {
		t.Fatalf("links to the merged-away id must be re-pointed: %v", got[1].Related)
	}
	if n, _ := db.Incidents().CountIncidents(ctx, incidentlib.IncidentFilter{}); n != 2 {
		t.Fatalf("%d incidents", n)
	}
	mustCheck(t, db)
}
