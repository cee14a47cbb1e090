package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Aggregates for dashboards (incidentlib.IncidentAggregates), counted
// from the postings: the set of a filter is intersected with the postings
// of years, terms, organizations and durations, never with the records.

// namedPosting is a posting read in a transaction (valid only inside it),
// with the part of its name after its prefix.
type namedPosting struct {
	name string
	key  string // the whole posting name
	bm   *roaring.Bitmap
}

// postingsWithPrefix reads every posting whose name starts with prefix,
// in name order.
func postingsWithPrefix(tx *bolt.Tx, prefix string) ([]namedPosting, error) {
	var out []namedPosting
	c := tx.Bucket(bucketPostings).Cursor()
	for k, v := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
		bm := roaring.New()
		if _, err := bm.FromBuffer(v); err != nil {
			return nil, err
		}
		out = append(out, namedPosting{string(k[len(prefix):]), string(k), bm})
	}
	return out, nil
}

func termPostings(tx *bolt.Tx, kind incidentlib.TermKind) ([]namedPosting, error) {
	if !kind.IsValid() {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "unknown taxonomy kind %q", kind)
	}
	return postingsWithPrefix(tx, postTerm(kind, ""))
}

// YearTermCountsOf counts the incidents of set per year and term of kind.
func (st Incidents) YearTermCountsOf(ctx context.Context, set *roaring.Bitmap, kind incidentlib.TermKind) ([]incidentlib.YearTermCount, error) {
	out := []incidentlib.YearTermCount{}
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		terms, err := termPostings(tx, kind)
		if err != nil {
			return err
		}
		years, err := postingsWithPrefix(tx, prefixYear)
		if err != nil {
			return err
		}
		yearOf := make([]int, len(years))
		for k, y := range years {
			yearOf[k], _ = yearOfPosting(prefixYear + y.name)
		}
		st.db.dense.crossCounts(tx, set, years, terms, func(i, j int, n uint64) {
			out = append(out, incidentlib.YearTermCount{Year: yearOf[i], Term: incidentlib.TermKey{Kind: kind, Slug: terms[j].name}, Count: int(n)})
		})
		return nil
	})
	return out, err
}

// PairCountsOf counts the incidents of set per pair of a row term and a
// column term.
func (st Incidents) PairCountsOf(ctx context.Context, set *roaring.Bitmap, rows, columns incidentlib.TermKind) ([]incidentlib.PairCount, error) {
	out := []incidentlib.PairCount{}
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		rs, err := termPostings(tx, rows)
		if err != nil {
			return err
		}
		cs, err := termPostings(tx, columns)
		if err != nil {
			return err
		}
		st.db.dense.crossCounts(tx, set, rs, cs, func(i, j int, n uint64) {
			out = append(out, incidentlib.PairCount{
				Row:    incidentlib.TermKey{Kind: rows, Slug: rs[i].name},
				Column: incidentlib.TermKey{Kind: columns, Slug: cs[j].name}, Count: int(n)})
		})
		return nil
	})
	return out, err
}

// TopOrganizationsOf returns the organizations with the most incidents of
// set (as the affected organization).
func (st Incidents) TopOrganizationsOf(ctx context.Context, set *roaring.Bitmap, first int) ([]incidentlib.OrganizationCount, error) {
	if first < 1 || first > incidentlib.MaxTopOrganizations {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"first"},
			"first must be 1 to %d, got %d", incidentlib.MaxTopOrganizations, first)
	}
	var all []incidentlib.OrganizationCount
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPostings).Cursor()
		bm := roaring.New()
		for k, v := c.Seek([]byte(prefixOrg)); k != nil && bytes.HasPrefix(k, []byte(prefixOrg)); k, v = c.Next() {
			if _, err := bm.FromBuffer(v); err != nil {
				return err
			}
			if n := set.AndCardinality(bm); n > 0 {
				all = append(all, incidentlib.OrganizationCount{Slug: string(k[len(prefixOrg):]), Count: int(n)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b incidentlib.OrganizationCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	out := all[:min(first, len(all))]
	if out == nil {
		out = []incidentlib.OrganizationCount{}
	}
	return out, nil
}

// DurationsOf summarises the timeline durations of the incidents of set.
func (st Incidents) DurationsOf(ctx context.Context, set *roaring.Bitmap) (*incidentlib.Durations, error) {
	out := &incidentlib.Durations{}
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		var err error
		if out.DetectedAfter, err = durationStatsIn(tx, set, durDetected); err != nil {
			return err
		}
		out.ResolvedAfter, err = durationStatsIn(tx, set, durResolved)
		return err
	})
	return out, err
}

// latestDays is the date (days since 0001-01-01) of the latest dated
// incident in org, found from the newest year posting down.
func latestDays(years []namedPosting, sk *bolt.Bucket, org *roaring.Bitmap) (uint32, bool) {
	for i := len(years) - 1; i >= 0; i-- {
		in := roaring.And(org, years[i].bm)
		if in.IsEmpty() {
			continue
		}
		var best uint32
		found := false
		it := in.Iterator()
		for it.HasNext() {
			k := decodeSortKey(sk.Get(u32key(it.Next())))
			if k.dated && (!found || k.days > best) {
				best, found = k.days, true
			}
		}
		if found {
			return best, true
		}
	}
	return 0, false
}

// orgItem is an organization with the value it is ordered by.
type orgItem struct {
	org *incidentlib.Organization
	has bool   // a value (LATEST_INCIDENT: a dated incident)
	num uint64 // INCIDENT_COUNT, LATEST_INCIDENT
	str string // NAME: the name in lower case; SLUG: the slug
}

// orgOrder is an organization order, validated.
type orgOrder struct {
	field byte // 's', 'n', 'c', 'l'
	desc  bool
}

func orgOrderOf(q incidentlib.OrganizationQuery) (orgOrder, error) {
	var o orgOrder
	switch q.Field {
	case incidentlib.OrgOrderSlug, "":
		o.field = 's'
	case incidentlib.OrgOrderName:
		o.field = 'n'
	case incidentlib.OrgOrderIncidentCount:
		o.field, o.desc = 'c', true
	case incidentlib.OrgOrderLatestIncident:
		o.field, o.desc = 'l', true
	default:
		return o, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"orderBy", "field"}, "unknown organization order field %q", q.Field)
	}
	switch q.Direction {
	case "":
	case incidentlib.Asc:
		o.desc = false
	case incidentlib.Desc:
		o.desc = true
	default:
		return o, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"orderBy", "direction"}, "unknown order direction %q", q.Direction)
	}
	return o, nil
}

// compare orders a before b (negative), ties by slug ascending, items
// without a value last.
func (o orgOrder) compare(a, b *orgItem) int {
	if a.has != b.has {
		if a.has {
			return -1
		}
		return 1
	}
	c := 0
	if a.has {
		switch o.field {
		case 'c', 'l':
			switch {
			case a.num < b.num:
				c = -1
			case a.num > b.num:
				c = 1
			}
		default:
			c = strings.Compare(a.str, b.str)
		}
		if o.desc {
			c = -c
		}
	}
	if c != 0 {
		return c
	}
	return strings.Compare(a.org.Slug, b.org.Slug)
}

// Cursors of an ordered list of organizations: 'O', then the order's
// field and direction, the value and the slug.
func (o orgOrder) cursor(it *orgItem) string {
	b := []byte{o.field, 0, 0}
	if o.desc {
		b[1] = 1
	}
	if it.has {
		b[2] = 1
	}
	b = binary.BigEndian.AppendUint64(b, it.num)
	b = binary.BigEndian.AppendUint16(b, uint16(len(it.str)))
	b = append(b, it.str...)
	b = append(b, it.org.Slug...)
	return encodeCursor('O', b)
}

func (o orgOrder) decodeCursor(s string) (*orgItem, error) {
	b, err := decodeCursorRaw(s)
	bad := incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q is malformed", s)
	if err != nil || len(b) < 2+3+8+2 || b[1] != 'O' {
		return nil, bad
	}
	b = b[2:]
	if b[0] != o.field || (b[1] == 1) != o.desc {
		return nil, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q was made for another order", s)
	}
	it := &orgItem{has: b[2] == 1, num: binary.BigEndian.Uint64(b[3:])}
	n := int(binary.BigEndian.Uint16(b[11:]))
	if len(b) < 13+n {
		return nil, bad
	}
	it.str = string(b[13 : 13+n])
	it.org = &incidentlib.Organization{Slug: string(b[13+n:])}
	return it, nil
}

// FindOrganizationsBy returns one page of the organizations q selects in
// its order. The organizations are few beside the incidents (one per
// slug); each request orders those selected.
func (st Incidents) FindOrganizationsBy(ctx context.Context, q incidentlib.OrganizationQuery, p incidentlib.PageArgs) (*incidentlib.OrganizationPage, error) {
	n, backward, err := pageSize(p)
	if err != nil {
		return nil, err
	}
	ord, err := orgOrderOf(q)
	if err != nil {
		return nil, err
	}
	var after, before *orgItem
	if p.After != nil {
		if after, err = ord.decodeCursor(*p.After); err != nil {
			return nil, err
		}
	}
	if p.Before != nil {
		if before, err = ord.decodeCursor(*p.Before); err != nil {
			return nil, err
		}
	}
	prefix := strings.ToLower(q.NameStartsWith)
	var items []*orgItem
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		var years []namedPosting
		if ord.field == 'l' {
			if years, err = postingsWithPrefix(tx, prefixYear); err != nil {
				return err
			}
		}
		pc := tx.Bucket(bucketPostings).Cursor()
		sk := tx.Bucket(bucketSortKeys)
		unlisted := unlistedSet(tx) // counted and dated as incidentCount counts (listed.go)
		return tx.Bucket(bucketOrgs).ForEach(func(k, v []byte) error {
			o, err := st.db.orgs.decode(string(k), v)
			if err != nil {
				return err
			}
			if prefix != "" && !strings.HasPrefix(strings.ToLower(o.Name), prefix) {
				return nil
			}
			it := &orgItem{org: o, has: true}
			switch ord.field {
			case 's':
				it.str = o.Slug
			case 'n':
				it.str = strings.ToLower(o.Name)
			case 'c':
				it.num = listedCount(tx, pc, postOrg(o.Slug), unlisted)
			case 'l':
				bm := roaring.New()
				if v := seekGet(pc, []byte(postOrg(o.Slug))); v != nil {
					if _, err := bm.FromBuffer(v); err != nil {
						return err
					}
				}
				if !unlisted.IsEmpty() {
					bm = roaring.AndNot(bm, unlisted)
				}
				d, ok := latestDays(years, sk, bm)
				it.has, it.num = ok, uint64(d)
			}
			items = append(items, it)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(items, ord.compare)
	// The window between the cursors, then its first or last n.
	lo, hi := 0, len(items)
	if after != nil {
		lo, _ = slices.BinarySearchFunc(items, after, ord.compare)
		if lo < len(items) && ord.compare(items[lo], after) == 0 {
			lo++
		}
	}
	if before != nil {
		hi, _ = slices.BinarySearchFunc(items, before, ord.compare)
	}
	hi = max(hi, lo)
	page := &incidentlib.OrganizationPage{TotalCount: len(items)}
	from, to := lo, min(lo+n, hi)
	if backward {
		from, to = max(hi-n, lo), hi
		page.HasPreviousPage, page.HasNextPage = from > lo, hi < len(items)
	} else {
		page.HasNextPage, page.HasPreviousPage = to < hi, lo > 0
	}
	for _, it := range items[from:to] {
		page.Organizations = append(page.Organizations, it.org)
		page.Cursors = append(page.Cursors, ord.cursor(it))
	}
	return page, nil
}
