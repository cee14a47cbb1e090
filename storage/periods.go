package storage

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Period postings: the incidents of each year, month and day of their date
// and of their updated_at, so that a date range or an updatedSince bound
// is a union of at most a few dozen postings, whatever the size of the
// library: the whole years inside the range, then the whole months at its
// ends, then the days at its ends. The year postings of the date are the
// ones the years facet reads (postYear); the others are written here, by
// postingsOf like every posting, so every writer keeps them (writeindex.go's
// index and unindex) and check recomputes them.
//
// A range that covers every dated incident of the store is the dated
// posting itself. The one part read from an order index is updatedSince's
// first, partial day: the incidents of that day updated at or after the
// bound, at most one day's updates.

const (
	prefixDateMonth = "dm\x00" // dm\x00YYYY-MM: dated in that month
	prefixDateDay   = "dd\x00" // dd\x00YYYY-MM-DD: dated that day
	prefixUpdYear   = "uy\x00" // uy\x00YYYY: updated_at (UTC) in that year
	prefixUpdMonth  = "um\x00" // um\x00YYYY-MM
	prefixUpdDay    = "ud\x00" // ud\x00YYYY-MM-DD
)

// periodPrefixes are the posting prefixes this file writes, for the
// pending check (withoutPendingPeriods).
var periodPrefixes = []string{prefixDateMonth, prefixDateDay, prefixUpdYear, prefixUpdMonth, prefixUpdDay}

// periodKind names the postings of one calendar: the date's or the
// updated_at's.
type periodKind struct {
	year, month, day string // posting prefixes
	order            byte   // the ascending order index of the value
}

var (
	datePeriods = periodKind{year: prefixYear, month: prefixDateMonth, day: prefixDateDay, order: ordDateAsc}
	updPeriods  = periodKind{year: prefixUpdYear, month: prefixUpdMonth, day: prefixUpdDay, order: ordUpdAsc}
)

func (k periodKind) yearName(t time.Time) string {
	return k.year + fmt.Sprintf("%04d", t.Year())
}
func (k periodKind) monthName(t time.Time) string {
	return k.month + fmt.Sprintf("%04d-%02d", t.Year(), t.Month())
}
func (k periodKind) dayName(t time.Time) string {
	return k.day + fmt.Sprintf("%04d-%02d-%02d", t.Year(), t.Month(), t.Day())
}

// periodPostingsOf lists the period postings of inc but the date's year
// (postingsOf writes that one as before).
func periodPostingsOf(inc *incidentlib.Incident) []string {
	var p []string
	if t, err := incidentlib.ParseDate(inc.Date); inc.Date != "" && err == nil {
		p = append(p, datePeriods.monthName(t), datePeriods.dayName(t))
	}
	if t, err := incidentlib.ParseTimestamp(inc.UpdatedAt); inc.UpdatedAt != "" && err == nil {
		t = t.UTC()
		p = append(p, updPeriods.yearName(t), updPeriods.monthName(t), updPeriods.dayName(t))
	}
	return p
}

// dayTime is the start of day d (days since 0001-01-01, daysOf).
func dayTime(d uint32) time.Time {
	return time.Unix((int64(d)-unixEpochDays)*86400, 0).UTC()
}

// utcDay is the day of t in UTC, as daysOf counts them.
func utcDay(t time.Time) uint32 {
	t = t.UTC()
	return daysOf(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC))
}

// periodNames lists the postings whose union is the incidents with a
// value of kind on days from to to, inclusive: whole years, else whole
// months, else days.
func (k periodKind) periodNames(from, to uint32) []string {
	var names []string
	for d := from; d <= to; {
		t := dayTime(d)
		yearEnd := utcDay(time.Date(t.Year(), 12, 31, 0, 0, 0, 0, time.UTC))
		monthEnd := utcDay(time.Date(t.Year(), t.Month()+1, 0, 0, 0, 0, 0, time.UTC))
		switch {
		case t.Month() == 1 && t.Day() == 1 && yearEnd <= to:
			names = append(names, k.yearName(t))
			d = yearEnd + 1
		case t.Day() == 1 && monthEnd <= to:
			names = append(names, k.monthName(t))
			d = monthEnd + 1
		default:
			names = append(names, k.dayName(t))
			d++
		}
	}
	return names
}

// valueSpan is the first and last day of kind held in the order index;
// ok is false when no incident has one.
func (k periodKind) valueSpan(tx *bolt.Tx) (first, last uint32, ok bool) {
	c := tx.Bucket(bucketOrders).Cursor()
	lo, _ := c.Seek([]byte{k.order, 0})
	if lo == nil || lo[0] != k.order || lo[1] != 0 {
		return 0, 0, false
	}
	hi, _ := c.Seek([]byte{k.order, 1})
	if hi == nil {
		hi, _ = c.Last()
	} else {
		hi, _ = c.Prev()
	}
	return k.dayOfKey(lo), k.dayOfKey(hi), true
}

// dayOfKey is the day of the value in an order key of kind (with its order byte).
func (k periodKind) dayOfKey(key []byte) uint32 {
	if k.order == ordDateAsc {
		return be32(key[2:6])
	}
	return utcDay(time.Unix(0, int64(getU64(key[2:10])^(1<<63))))
}

// periodSet is the union of the postings of kind on days from to to,
// inclusive, clamped to the days the store holds.
func (k periodKind) periodSet(tx *bolt.Tx, from, to uint32) *roaring.Bitmap {
	first, last, ok := k.valueSpan(tx)
	if !ok {
		return roaring.New()
	}
	from, to = max(from, first), min(to, last)
	if from > to {
		return roaring.New()
	}
	if k.order == ordDateAsc && from == first && to == last {
		return readPosting(tx, postDated) // every dated incident
	}
	names := k.periodNames(from, to)
	bms := make([]*roaring.Bitmap, len(names))
	for i, n := range names {
		bms[i] = readPosting(tx, n)
	}
	return unionOf(bms) // match.go
}

// updatedSinceSet is the incidents updated at or after t: the rest of
// t's day from the order index, the days after it from the postings.
func updatedSinceSet(tx *bolt.Tx, t time.Time) *roaring.Bitmap {
	d := utcDay(t)
	rest := updPeriods.periodSet(tx, d+1, ^uint32(0)-1)
	if t.Equal(dayTime(d)) {
		return roaring.FastOr(rest, updPeriods.periodSet(tx, d, d))
	}
	bm := roaring.New()
	lo := append([]byte{ordUpdAsc, 0}, u64key(uint64(t.UnixNano())^(1<<63))...)
	end := dayTime(d + 1).UnixNano()
	c := tx.Bucket(bucketOrders).Cursor()
	for k, _ := c.Seek(lo); k != nil && k[0] == ordUpdAsc && k[1] == 0; k, _ = c.Next() {
		if int64(getU64(k[2:10])^(1<<63)) >= end {
			break
		}
		bm.Add(numberOfOrderKey(ordUpdAsc, k[1:]))
	}
	if bm.IsEmpty() {
		return rest
	}
	return roaring.FastOr(rest, bm)
}

// metaPeriods marks a store whose period postings are written: a store
// made before them gets them at its first writable open
// (indexPeriodsOnce); until then (a read-only open) filters walk the
// order indexes as before (match.go).
var metaPeriods = []byte("periods_index")

func hasPeriods(tx *bolt.Tx) bool { return tx.Bucket(bucketMeta).Get(metaPeriods) != nil }

// indexPeriodsOnce writes the period postings of every stored record if
// the store has never had them. The records are read once, for their date
// and updated_at alone.
func indexPeriodsOnce(tx *bolt.Tx) error {
	return indexOnce(tx, metaPeriods, func(v []byte) []string { // durations.go
		var rec struct {
			Date      any `json:"date"`
			UpdatedAt any `json:"updated_at"`
		}
		if json.Unmarshal(v, &rec) != nil {
			return nil // check reports the record
		}
		str := func(x any) string { s, _ := x.(string); return s }
		return periodPostingsOf(&incidentlib.Incident{Date: str(rec.Date), UpdatedAt: str(rec.UpdatedAt)})
	})
}

// withoutPendingPeriods leaves the period postings out of what check
// expects when the store has not had them written yet (a store made
// before them, opened read-only since), and says so as a warning.
func withoutPendingPeriods(tx *bolt.Tx, postings map[string]*roaring.Bitmap) []string {
	return withoutPending(tx, metaPeriods, periodPrefixes, postings, // durations.go
		"the period postings (dates and updates by year, month and day) are not written yet: the next writable open of the store writes them")
}
