package storage

import (
	"bytes"
	"fmt"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Filters: an incident filter becomes a set of incident numbers read
// from the postings, in the transaction of the read that uses it.

// readPosting returns the bitmap of name; the result must be used only
// inside tx, since it points into the memory-mapped file.
func readPosting(tx *bolt.Tx, name string) *roaring.Bitmap {
	v := tx.Bucket(bucketPostings).Get([]byte(name))
	bm := roaring.New()
	if v != nil {
		if _, err := bm.FromBuffer(v); err != nil {
			return roaring.New()
		}
	}
	return bm
}

// unionOf is the union of bms, never to be modified: the one bitmap
// itself when there is one (FastOr would copy it: a term's posting of a
// million incidents is 128 KB of bitmap containers), a new one otherwise.
func unionOf(bms []*roaring.Bitmap) *roaring.Bitmap {
	if len(bms) == 1 {
		return bms[0]
	}
	return roaring.FastOr(bms...)
}

// matchSet is the set of incident numbers a filter selects, held as the
// intersection of its parts less minus and computed only as far as a
// reader needs it (lazymatch.go); all is true when the filter does not
// constrain (parts is then the all posting alone). A part may be a
// posting itself, pointing into the file: never modify one.
type matchSet struct {
	parts []*roaring.Bitmap
	minus *roaring.Bitmap // nil: nothing taken out
	// bm, once made (set), is the set itself; own says it was built here
	// (not a posting).
	bm      *roaring.Bitmap
	own     bool
	n       uint64 // the set's size, once counted
	counted bool
	reduced bool // parts sorted by size, at most two (reduce)
	all     bool
	// dateFrom and dateTo, when set, let an ordered scan by date start at
	// the bound instead of walking the whole index.
	dateFrom, dateTo *uint32
}

// matchFields evaluates one filter's plain fields from the indexes (match,
// setfilter.go, is the whole filter's); listedOnly applies the visibility
// rule to them (listed.go), which a set filter applies once to the whole.
func (db *DB) matchFields(tx *bolt.Tx, f incidentlib.IncidentFilter, listedOnly bool) (*matchSet, error) {
	all := readPosting(tx, postAll)
	var sets []*roaring.Bitmap
	ms := &matchSet{}
	union := func(names []string) {
		bms := make([]*roaring.Bitmap, 0, len(names))
		for _, n := range names {
			bms = append(bms, readPosting(tx, n))
		}
		sets = append(sets, unionOf(bms))
	}
	if len(f.IDs) > 0 {
		bm := roaring.New()
		for _, id := range f.IDs {
			if n, ok := incidentlib.ParseID(id); ok {
				bm.Add(n)
			}
		}
		sets = append(sets, bm)
	}
	if len(f.Organizations) > 0 {
		names := make([]string, 0, len(f.Organizations))
		for _, s := range f.Organizations {
			names = append(names, db.orgPostings(s)...) // a merged-away slug: the survivor's too (orgadmin.go)
		}
		union(names)
	}
	lists := f.TermLists()
	for _, kind := range incidentlib.TermKinds {
		if slugs := lists[kind]; len(slugs) > 0 {
			names := make([]string, len(slugs))
			for i, s := range slugs {
				names[i] = postTerm(kind, db.Taxonomies().Taxonomy().Canonical(kind, s))
			}
			union(names)
		}
	}
	flagSet := func(b *bool, p *roaring.Bitmap) {
		if *b {
			sets = append(sets, p)
		} else {
			sets = append(sets, roaring.AndNot(all, p))
		}
	}
	flag := func(b *bool, name string) {
		if b != nil {
			flagSet(b, readPosting(tx, name))
		}
	}
	if len(f.Verification) > 0 {
		bm, err := verificationSet(tx, all, f.Verification)
		if err != nil {
			return nil, err
		}
		sets = append(sets, bm)
	}
	if f.Reviewed != nil || len(f.ReviewStates) > 0 {
		bm, err := stateSet(tx, all, f.ReviewStates, f.Reviewed, listedOnly)
		if err != nil {
			return nil, err
		}
		sets = append(sets, bm)
	} else if listedOnly && len(f.IDs) == 0 {
		// The visibility rule (listed.go): unlisted (withdrawn) incidents
		// leave lists unless the filter names their state; they are taken
		// out of the set as it is read (lazymatch.go), not cut from all.
		if un := unlistedSet(tx); !un.IsEmpty() {
			ms.minus = un
		}
	}
	flag(f.IsRecurrence, postRecurrence)
	if f.HasRecurrences != nil {
		// Recurrences a list shows (the visibility rule, listed.go).
		p, err := db.hasRecurrencesSet(tx)
		if err != nil {
			return nil, err
		}
		flagSet(f.HasRecurrences, p)
	}
	if f.DateFrom != nil || f.DateTo != nil {
		bm, from, to, err := dateRange(tx, f.DateFrom, f.DateTo)
		if err != nil {
			return nil, err
		}
		sets = append(sets, bm)
		ms.dateFrom, ms.dateTo = from, to
	}
	if f.UpdatedSince != nil {
		t, err := incidentlib.ParseTimestamp(*f.UpdatedSince)
		if err != nil {
			return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"filter", "updatedSince"}, "updatedSince %s", err)
		}
		bm := roaring.New()
		// The order holds int64 nanoseconds: a bound outside them is
		// before or after every updated_at (Validate keeps them inside),
		// where UnixNano would overflow.
		if !t.After(incidentlib.MaxUpdatedAt) {
			if t.Before(incidentlib.MinUpdatedAt) {
				t = incidentlib.MinUpdatedAt
			}
			if hasPeriods(tx) {
				bm = updatedSinceSet(tx, t) // periods.go
			} else { // a store without the period postings yet: the order from the bound
				lo := append([]byte{ordUpdAsc, 0}, u64key(uint64(t.UnixNano())^(1<<63))...)
				c := tx.Bucket(bucketOrders).Cursor()
				for k, _ := c.Seek(lo); k != nil && k[0] == ordUpdAsc && k[1] == 0; k, _ = c.Next() {
					bm.Add(numberOfOrderKey(ordUpdAsc, k[1:]))
				}
			}
		}
		sets = append(sets, bm)
	}
	if len(sets) == 0 {
		ms.parts = []*roaring.Bitmap{all}
		ms.all = ms.minus == nil
		return ms, nil
	}
	// Every posting holds stored incidents only (check verifies it);
	// the ids a filter names, and the targets of recurrence links, need
	// not be stored.
	if len(f.IDs) > 0 || (f.HasRecurrences != nil && *f.HasRecurrences) {
		sets = append(sets, all)
	}
	ms.parts = sets // intersected as far as a reader needs (lazymatch.go)
	return ms, nil
}

// stateSet is the union of the postings of the review states ss, and
// with reviewed (true: REVIEWED; false: any other state, WITHDRAWN only
// when ss names it or listedOnly is false). DRAFT is every incident in
// none of the others.
func stateSet(tx *bolt.Tx, all *roaring.Bitmap, ss []incidentlib.ReviewState, reviewed *bool, listedOnly bool) (*roaring.Bitmap, error) {
	others := func() *roaring.Bitmap {
		bms := make([]*roaring.Bitmap, 0, 4)
		for _, s := range incidentlib.ReviewStates[1:] {
			bms = append(bms, readPosting(tx, postState(s)))
		}
		return roaring.AndNot(all, roaring.FastOr(bms...))
	}
	of := func(s incidentlib.ReviewState) *roaring.Bitmap {
		if s == incidentlib.ReviewDraft {
			return others()
		}
		return readPosting(tx, postState(s))
	}
	var bm *roaring.Bitmap
	if len(ss) > 0 {
		bms := make([]*roaring.Bitmap, 0, len(ss))
		for i, s := range ss {
			if !s.IsValid() {
				return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"filter", "reviewStates", fmt.Sprint(i)}, "unknown review state %q", s)
			}
			bms = append(bms, of(s))
		}
		bm = unionOf(bms)
	}
	if reviewed != nil {
		r := of(incidentlib.ReviewReviewed)
		if !*reviewed {
			r = roaring.AndNot(all, r)
			if listedOnly && len(ss) == 0 {
				r.AndNot(unlistedSet(tx)) // the visibility rule (listed.go)
			}
		}
		if bm == nil {
			bm = r
		} else {
			bm = roaring.And(bm, r)
		}
	}
	return bm, nil
}

// verificationSet is the union of the postings of vs; UNKNOWN is every
// incident in none of the other postings.
func verificationSet(tx *bolt.Tx, all *roaring.Bitmap, vs []incidentlib.Verification) (*roaring.Bitmap, error) {
	var bms []*roaring.Bitmap
	for n, v := range vs {
		switch {
		case !v.IsValid():
			return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"filter", "verification", fmt.Sprint(n)},
				"verification %q is not one of PRIMARY_SOURCE, SECONDARY_REPORT, FIRST_PERSON_ACCOUNT, UNKNOWN", v)
		case v == incidentlib.VerificationUnknown:
			known := make([]*roaring.Bitmap, 0, 3)
			for _, o := range incidentlib.Verifications {
				if o != incidentlib.VerificationUnknown {
					known = append(known, readPosting(tx, postVerification(o)))
				}
			}
			bms = append(bms, roaring.AndNot(all, roaring.FastOr(known...)))
		default:
			bms = append(bms, readPosting(tx, postVerification(v)))
		}
	}
	return unionOf(bms), nil
}

// dateRange returns the dated incidents within the inclusive bounds: whole
// years from the year postings, the partial years at either end from the
// date index.
func dateRange(tx *bolt.Tx, fromS, toS *string) (*roaring.Bitmap, *uint32, *uint32, error) {
	fromP, err := dateBound(fromS, "dateFrom")
	if err != nil {
		return nil, nil, nil, err
	}
	toP, err := dateBound(toS, "dateTo")
	if err != nil {
		return nil, nil, nil, err
	}
	if toP != nil && *toP == beforeDays {
		return roaring.New(), nil, nil, nil // a dateTo before 0001-01-01: no date is before it
	}
	from, to := uint32(0), ^uint32(0)
	if fromP != nil {
		from = *fromP
	}
	if toP != nil {
		to = *toP
	}
	bm := roaring.New()
	if from > to {
		return bm, fromP, toP, nil
	}
	if hasPeriods(tx) {
		return datePeriods.periodSet(tx, from, to), fromP, toP, nil // periods.go
	}
	// A store without the period postings yet (opened read-only since
	// before them): years from their postings, the rest from the order.
	// Years fully inside the range come from their postings.
	c := tx.Bucket(bucketPostings).Cursor()
	var partial [][2]uint32
	for k, _ := c.Seek([]byte(prefixYear)); k != nil && bytes.HasPrefix(k, []byte(prefixYear)); k, _ = c.Next() {
		y, ok := yearOfPosting(string(k))
		if !ok {
			continue
		}
		ys := daysOf(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC))
		ye := daysOf(time.Date(y, 12, 31, 0, 0, 0, 0, time.UTC))
		switch {
		case ye < from || ys > to:
		case ys >= from && ye <= to:
			bm.Or(readPosting(tx, string(k)))
		default:
			partial = append(partial, [2]uint32{max(ys, from), min(ye, to)})
		}
	}
	oc := tx.Bucket(bucketOrders).Cursor()
	for _, r := range partial {
		lo := append([]byte{ordDateAsc, 0}, u32key(r[0])...)
		for k, _ := oc.Seek(lo); k != nil && k[0] == ordDateAsc && k[1] == 0; k, _ = oc.Next() {
			if d := be32(k[2:6]); d > r[1] {
				break
			}
			bm.Add(numberOfOrderKey(ordDateAsc, k[1:]))
		}
	}
	return bm, fromP, toP, nil
}

// dateBound parses the filter's date bound name, in days; nil when unset.
func dateBound(s *string, name string) (*uint32, error) {
	if s == nil {
		return nil, nil
	}
	t, err := incidentlib.ParseDate(*s)
	if err != nil {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"filter", name}, "%s %s", name, err)
	}
	if t.Year() < 1 {
		// Year 0000, which ParseDate reads: before every record's date
		// (Validate refuses it there), and before day 0 of the order.
		d := beforeDays
		if name == "dateFrom" {
			d = 0
		}
		return &d, nil
	}
	d := daysOf(t)
	return &d, nil
}

// beforeDays is the bound of a dateTo before 0001-01-01: no date matches.
const beforeDays = ^uint32(0)

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
