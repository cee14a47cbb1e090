package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// The period postings (periods.go) against a brute-force evaluation of
// the date and updatedAt bounds over every stored record, with random
// writes, deletes and withdrawals in between.

// TestPeriodFiltersMatchBruteForce: a seeded, bounded run (make test); the
// long one is TestLongPeriodFilters (-tags long).
func TestPeriodFiltersMatchBruteForce(t *testing.T) {
	eachMembershipWay(t, func(t *testing.T) { periodsRandom(t, 1, 6, 40) }) // lazymatch_test.go
}

// edgeDays are dates where a range's edges fall on a boundary: year and
// month ends, a leap day, and days around them.
var edgeDays = []string{
	"2007-12-31", "2008-01-01", "2008-02-28", "2008-02-29", "2008-03-01", "2008-12-31",
	"2009-01-01", "2009-01-31", "2009-02-01", "2009-06-15", "2009-12-31", "2010-01-01", "2010-07-31", "2010-08-01",
}

// edgeTimes are updated_at values at and around midnights, month and year
// ends.
var edgeTimes = []string{
	"2024-12-31T23:59:59.999999999Z", "2025-01-01T00:00:00Z", "2025-01-01T00:00:00.000000001Z",
	"2025-01-31T12:00:00Z", "2025-02-01T00:00:00Z", "2025-02-28T23:59:59Z", "2025-03-01T00:00:00+01:00",
	"2025-06-30T23:00:00-02:00", "2025-07-01T00:00:00Z", "2025-12-31T23:59:59Z", "2026-01-01T00:00:00Z", "2026-03-04T05:06:07Z",
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// randomDate is an edge day, another day of 2007-2011, or "" (undated).
func randomDate(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return ""
	case 1:
		return time.Date(2007, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(5*365)).Format(time.DateOnly)
	}
	return pick(r, edgeDays)
}

// randomTime is an edge time, or one of them moved by a random amount.
func randomTime(r *rand.Rand) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, pick(r, edgeTimes))
	if r.IntN(2) == 0 {
		t = t.Add(time.Duration(r.Int64N(int64(200*24*time.Hour))) - 100*24*time.Hour)
	}
	return t
}

// randomBound is a dateFrom or dateTo: nil, an edge day or a day around it.
func randomBound(r *rand.Rand) *string {
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		s := pick(r, []string{"0000-01-01", "1990-05-05", "2099-01-01"})
		return &s
	}
	d, _ := time.Parse(time.DateOnly, pick(r, edgeDays))
	if r.IntN(3) == 0 {
		d = time.Date(2007, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(5*365))
	}
	s := d.AddDate(0, 0, r.IntN(3)-1).Format(time.DateOnly)
	return &s
}

func randomFilter(r *rand.Rand, symptoms []string) incidentlib.IncidentFilter {
	var f incidentlib.IncidentFilter
	if r.IntN(3) > 0 {
		f.DateFrom = randomBound(r)
	}
	if r.IntN(3) > 0 {
		f.DateTo = randomBound(r)
	}
	if r.IntN(2) == 0 {
		t := randomTime(r)
		switch r.IntN(4) {
		case 0: // a midnight exactly
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		case 1:
			t = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
		case 2: // among the writes' times
			t = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(400 * 24 * time.Hour))))
		}
		s := t.Format(time.RFC3339Nano)
		f.UpdatedSince = &s
	}
	if r.IntN(3) == 0 {
		f.Symptoms = []string{pick(r, symptoms)}
	}
	if r.IntN(5) == 0 {
		f.ReviewStates = []incidentlib.ReviewState{incidentlib.ReviewWithdrawn, incidentlib.ReviewDraft}
	}
	return f
}

// inRanges is the brute force of the filter's date and updatedSince
// bounds.
func inRanges(inc *incidentlib.Incident, f incidentlib.IncidentFilter) bool {
	if f.DateFrom != nil && (inc.Date == "" || inc.Date < *f.DateFrom) {
		return false
	}
	if f.DateTo != nil && (inc.Date == "" || inc.Date > *f.DateTo) {
		return false
	}
	if f.UpdatedSince != nil {
		s, _ := time.Parse(time.RFC3339Nano, *f.UpdatedSince)
		u, err := time.Parse(time.RFC3339Nano, inc.UpdatedAt)
		if inc.UpdatedAt == "" || err != nil || u.Before(s) {
			return false
		}
	}
	return true
}

func periodsRandom(t *testing.T, seed uint64, rounds, writes int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 32))
	path := filepath.Join(t.TempDir(), "periods.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	// The clock of the writes goes forward (the history wants it), from
	// after every imported updated_at, landing on and around midnights:
	// about 6 days a write, so that make test-long's 8,000 writes end
	// near 2160, inside the times the store orders (to 2262-04-11: at 11
	// days a write they passed it, and check refused the stamps).
	now := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	advance := func() {
		next := time.Date(now.Year(), now.Month(), now.Day()+1+r.IntN(20), 0, 0, 0, 0, time.UTC)
		switch r.IntN(4) {
		case 0:
			now = next
		case 1:
			now = next.Add(-time.Nanosecond)
		default:
			now = now.Add(time.Duration(r.Int64N(int64(72 * time.Hour))))
		}
	}

	incs := corpus(t, 300, 7)
	var symptoms []string
	for _, inc := range incs {
		symptoms = append(symptoms, inc.Symptoms...)
		inc.Date = randomDate(r)
		inc.UpdatedAt = randomTime(r).Format(time.RFC3339Nano)
		inc.Related, inc.RecurrenceOf = nil, ""
	}
	mustImport(t, db, incs)
	ids := make([]string, len(incs))
	for i, inc := range incs {
		ids[i] = inc.ID
	}

	var reach lazyReach
	for round := 0; round < rounds; round++ {
		// Writes: new dates and times, deletes, withdrawals.
		for w := 0; w < writes; w++ {
			id := pick(r, ids)
			advance()
			switch r.IntN(5) {
			case 0:
				_, _ = db.Incidents().DeleteIncident(ctx, id, incidentlib.WriteOptions{}) // ENOTFOUND when gone already
			case 1:
				_, _ = db.Incidents().WithdrawIncident(ctx, id, "test", incidentlib.WriteOptions{}) // EINVALID when withdrawn or gone
			default:
				inc := wrGet(t, db, id)
				if inc == nil {
					continue // deleted: an upsert would need a restore first
				}
				inc.Date = randomDate(r)
				inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", "" // set by reviews, not upserts
				wrUpsert(t, db, inc)
			}
		}
		if round == rounds/2 {
			// A store from before the period postings, opened again: the
			// writable open writes them.
			db.Close()
			db, err = storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if err := storage.DropPeriodIndex(db); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if db, err = storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), RecordCache: 1000}); err != nil {
				t.Fatal(err)
			}
			db.Now = func() time.Time { return now }
		}
		mustCheck(t, db)
		stored, err := db.Incidents().FindIncidentsByIDs(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]*incidentlib.Incident{}
		for _, inc := range stored {
			if inc != nil {
				byID[inc.ID] = inc
			}
		}
		for q := 0; q < 40; q++ {
			f := randomFilter(r, symptoms)
			name := fmt.Sprintf("round %d filter %d dateFrom=%v dateTo=%v updatedSince=%v symptoms=%v states=%v", round, q,
				deref(f.DateFrom), deref(f.DateTo), deref(f.UpdatedSince), f.Symptoms, f.ReviewStates)
			rest := f
			rest.DateFrom, rest.DateTo, rest.UpdatedSince = nil, nil, nil
			var want []string
			others, _ := walk(t, db, rest, incidentlib.IncidentOrder{Field: incidentlib.OrderID, Direction: incidentlib.Asc}, 100, false)
			for _, id := range others {
				if inRanges(byID[id], f) {
					want = append(want, id)
				}
			}
			order := pick(r, []incidentlib.IncidentOrder{
				incidentlib.DefaultOrder, {Field: incidentlib.OrderDate, Direction: incidentlib.Asc},
				{Field: incidentlib.OrderUpdatedAt, Direction: incidentlib.Desc}, {Field: incidentlib.OrderID, Direction: incidentlib.Asc},
			})
			reach.see(t, db, f)
			got, total := walk(t, db, f, order, pick(r, []int{7, 20, 100}), r.IntN(2) == 0)
			if total != len(want) {
				t.Fatalf("%s: totalCount %d, brute force %d", name, total, len(want))
			}
			if n, err := db.Incidents().CountIncidents(ctx, f); err != nil || n != len(want) {
				t.Fatalf("%s: CountIncidents %d (%v), brute force %d", name, n, err, len(want))
			}
			checkFacets(t, db, f, want, byID)
			slices.SortFunc(got, func(a, b string) int {
				na, _ := incidentlib.ParseID(a)
				nb, _ := incidentlib.ParseID(b)
				return int(na) - int(nb)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("%s:\n got %v\nwant %v", name, got, want)
			}
			checkYears(t, db, f, want, byID) // lazymatch_test.go
		}
	}
	reach.check(t)
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// TestPeriodPostingsUpgradeAndCheck: a store without the period postings
// (written before them) answers date filters from the order index when
// opened read-only, check says they are pending, and the next writable
// open writes them; check finds a period posting that is wrong.
func TestPeriodPostingsUpgradeAndCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	open := func(ro bool) *storage.DB {
		db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open(false)
	incs := corpus(t, 300, 5)
	mustImport(t, db, incs)
	f := incidentlib.IncidentFilter{DateFrom: ptr("2009-02-11"), DateTo: ptr("2016-08-02"), UpdatedSince: ptr("2025-03-03T10:00:00Z")}
	want := wrCount(t, db, f)
	if n := len(brute(incs, f)); want != n || n == 0 {
		t.Fatalf("count %d, brute force %d", want, n)
	}
	if err := storage.DropPeriodIndex(db); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = open(true)
	if n := wrCount(t, db, f); n != want {
		t.Fatalf("read-only store without the period postings: count %d, want %d", n, want)
	}
	problems, err := db.Maintenance().Check(ctx)
	if err != nil || len(problems) > 0 {
		t.Fatalf("check of a store without the period postings yet: %v %v", problems, err)
	}
	db.Close()

	db = open(false)
	defer db.Close()
	mustCheck(t, db)
	if n := wrCount(t, db, f); n != want {
		t.Fatalf("after the upgrade: count %d, want %d", n, want)
	}
	var names []string
	err = db.Bolt().View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("postings")).ForEach(func(k, _ []byte) error {
			for _, p := range storage.PeriodPrefixes {
				if strings.HasPrefix(string(k), p) {
					names = append(names, string(k))
				}
			}
			return nil
		})
	})
	if err != nil || len(names) == 0 {
		t.Fatalf("no period postings after the upgrade: %v", err)
	}
	// A wrong period posting: check reports it.
	if err := db.Bolt().Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("postings")).Delete([]byte(names[len(names)/2]))
	}); err != nil {
		t.Fatal(err)
	}
	problems, err = db.Maintenance().Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 {
		t.Fatalf("check did not see the missing posting %q", names[len(names)/2])
	}
}
