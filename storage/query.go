package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

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

// matchSet is the set of incident numbers a filter selects; all is true
// when the filter does not constrain (bm is then the all posting).
type matchSet struct {
	bm  *roaring.Bitmap
	all bool
	// dateFrom and dateTo, when set, let an ordered scan by date start at
	// the bound instead of walking the whole index.
	dateFrom, dateTo *uint32
}

// match evaluates a filter from the indexes.
func (db *DB) match(tx *bolt.Tx, f incidentlib.IncidentFilter) (*matchSet, error) {
	all := readPosting(tx, postAll)
	var sets []*roaring.Bitmap
	union := func(names []string) {
		bms := make([]*roaring.Bitmap, 0, len(names))
		for _, n := range names {
			bms = append(bms, readPosting(tx, n))
		}
		sets = append(sets, roaring.FastOr(bms...))
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
		names := make([]string, len(f.Organizations))
		for i, s := range f.Organizations {
			names[i] = postOrg(s)
		}
		union(names)
	}
	lists := f.TermLists()
	for _, kind := range incidentlib.TermKinds {
		if slugs := lists[kind]; len(slugs) > 0 {
			names := make([]string, len(slugs))
			for i, s := range slugs {
				names[i] = postTerm(kind, s)
			}
			union(names)
		}
	}
	flag := func(b *bool, name string) {
		if b == nil {
			return
		}
		p := readPosting(tx, name)
		if *b {
			sets = append(sets, p)
		} else {
			sets = append(sets, roaring.AndNot(all, p))
		}
	}
	flag(f.Reviewed, postReviewed)
	flag(f.IsRecurrence, postRecurrence)
	flag(f.HasRecurrences, postHasRec)
	ms := &matchSet{}
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
		lo := append([]byte{ordUpdAsc, 0}, u64key(uint64(t.UnixNano())^(1<<63))...)
		c := tx.Bucket(bucketOrders).Cursor()
		for k, _ := c.Seek(lo); k != nil && k[0] == ordUpdAsc && k[1] == 0; k, _ = c.Next() {
			bm.Add(numberOfOrderKey(ordUpdAsc, k[1:]))
		}
		sets = append(sets, bm)
	}
	if len(sets) == 0 {
		ms.bm, ms.all = all, true
		return ms, nil
	}
	sets = append(sets, all)
	ms.bm = roaring.FastAnd(sets...)
	return ms, nil
}

// dateRange returns the dated incidents within the inclusive bounds: whole
// years from the year postings, the partial years at either end from the
// date index.
func dateRange(tx *bolt.Tx, fromS, toS *string) (*roaring.Bitmap, *uint32, *uint32, error) {
	from, to := uint32(0), ^uint32(0)
	var fromP, toP *uint32
	if fromS != nil {
		t, err := incidentlib.ParseDate(*fromS)
		if err != nil {
			return nil, nil, nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"filter", "dateFrom"}, "dateFrom %s", err)
		}
		from = daysOf(t)
		fromP = &from
	}
	if toS != nil {
		t, err := incidentlib.ParseDate(*toS)
		if err != nil {
			return nil, nil, nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"filter", "dateTo"}, "dateTo %s", err)
		}
		to = daysOf(t)
		toP = &to
	}
	bm := roaring.New()
	if from > to {
		return bm, fromP, toP, nil
	}
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

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// FindIncidentsByIDs returns the incidents in the order of ids, nil where
// an id is unknown or malformed, reading in one transaction.
func (db *DB) FindIncidentsByIDs(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
	out := make([]*incidentlib.Incident, len(ids))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		rr := db.recordReaderIn(ctx, tx) // one cursor for every record (readpath.go)
		for i, id := range ids {
			n, ok := incidentlib.ParseID(id)
			if !ok {
				continue
			}
			inc, err := rr.get(n)
			if err != nil {
				return err
			}
			if inc == nil { // merged away into another incident?
				if to, ok := alias(tx, n); ok {
					if inc, err = rr.get(to); err != nil {
						return err
					}
				}
			}
			out[i] = inc
		}
		return nil
	})
	return out, err
}

// CountIncidents returns how many incidents match f.
func (db *DB) CountIncidents(ctx context.Context, f incidentlib.IncidentFilter) (int, error) {
	var count int
	err := db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := db.match(tx, f)
		if err != nil {
			return err
		}
		count = int(ms.bm.GetCardinality())
		return nil
	})
	return count, err
}

// pageSize validates the Relay arguments.
func pageSize(p incidentlib.PageArgs) (n int, backward bool, err error) {
	if p.First != nil && p.Last != nil {
		return 0, false, incidentlib.Errorf(incidentlib.EINVALID, "give first or last, not both")
	}
	if p.After != nil && p.Last != nil && p.Before == nil {
		return 0, false, incidentlib.Errorf(incidentlib.EINVALID, "last goes with before, not with after")
	}
	if p.Before != nil && p.First != nil && p.After == nil {
		return 0, false, incidentlib.Errorf(incidentlib.EINVALID, "first goes with after, not with before")
	}
	n = incidentlib.DefaultPageSize
	arg := "first"
	if p.Last != nil {
		n, backward, arg = *p.Last, true, "last"
	} else if p.First != nil {
		n = *p.First
	} else if p.Before != nil && p.After == nil {
		backward = true
	}
	if n < 0 {
		return 0, false, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{arg}, "%s must not be negative, got %d", arg, n)
	}
	if n > incidentlib.MaxPageSize {
		return 0, false, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{arg}, "%s may be at most %d, got %d", arg, incidentlib.MaxPageSize, n)
	}
	return n, backward, nil
}

// smallSet is the size under which a filtered page is ordered in memory
// from the sort keys instead of by walking the order index.
var smallSet = 4096

// FindIncidents returns one page of the incidents that match f in order.
func (db *DB) FindIncidents(ctx context.Context, f incidentlib.IncidentFilter, o incidentlib.IncidentOrder, p incidentlib.PageArgs) (*incidentlib.IncidentPage, error) {
	ord, err := orderByte(o)
	if err != nil {
		return nil, err
	}
	n, backward, err := pageSize(p)
	if err != nil {
		return nil, err
	}
	var after, before []byte
	if p.After != nil {
		if after, err = decodeCursor(ord, *p.After); err != nil {
			return nil, err
		}
	}
	if p.Before != nil {
		if before, err = decodeCursor(ord, *p.Before); err != nil {
			return nil, err
		}
	}
	page := &incidentlib.IncidentPage{}
	err = db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := db.match(tx, f)
		if err != nil {
			return err
		}
		page.TotalCount = int(ms.bm.GetCardinality())
		var seq orderedSeq
		if !ms.all && page.TotalCount <= smallSet {
			seq = newMemSeq(tx, ord, ms.bm)
		} else {
			seq = &indexSeq{c: tx.Bucket(bucketOrders).Cursor(), ord: ord, ms: ms}
		}
		keys, hasMore, hasBeyond := collect(seq, after, before, n, backward)
		if backward {
			page.HasPreviousPage, page.HasNextPage = hasMore, hasBeyond
		} else {
			page.HasNextPage, page.HasPreviousPage = hasMore, hasBeyond
		}
		page.IDs, page.Cursors = pageStrings(ord, keys)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// orderedSeq is the matching incidents in one order, as order keys.
type orderedSeq interface {
	// first returns the first key at or after from (nil: the start) going
	// forward, or at or before from (nil: the end) going backward.
	first(from []byte, backward bool) []byte
	// next returns the following key in the direction of the last first.
	next() []byte
}

// collect reads up to n keys strictly between after and before, from the
// start (or the end when backward). hasMore says more matched in the
// reading direction; hasBeyond says something matched on the other side of
// the starting cursor.
func collect(seq orderedSeq, after, before []byte, n int, backward bool) (keys [][]byte, hasMore, hasBeyond bool) {
	start, stop := after, before
	if backward {
		start, stop = before, after
	}
	inRange := func(k []byte) bool {
		if stop == nil {
			return true
		}
		if backward {
			return bytes.Compare(k, stop) > 0
		}
		return bytes.Compare(k, stop) < 0
	}
	k := seq.first(start, backward)
	if k != nil && start != nil && bytes.Equal(k, start) {
		k = seq.next()
	}
	var arena []byte // the keys' copies, in one allocation while they are of one length
	for ; k != nil && inRange(k); k = seq.next() {
		if len(keys) == n {
			hasMore = true
			break
		}
		if keys == nil {
			keys = make([][]byte, 0, min(n, 128))
			arena = make([]byte, 0, min(n, 128)*len(k))
		}
		arena = append(arena, k...) // a longer key moves the rest: the earlier copies stay valid
		keys = append(keys, arena[len(arena)-len(k):len(arena):len(arena)])
	}
	if start != nil {
		// Anything at or beyond the starting cursor, looking the other way?
		b := seq.first(start, !backward)
		hasBeyond = b != nil
	}
	if backward {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	return keys, hasMore, hasBeyond
}

// indexSeq walks the order index, keeping the keys whose incident matches.
type indexSeq struct {
	c        *bolt.Cursor
	ord      byte
	ms       *matchSet
	backward bool
}

func (s *indexSeq) accept(k []byte) []byte {
	for ; k != nil; k = s.step() {
		if len(k) == 0 || k[0] != s.ord {
			return nil
		}
		key := k[1:]
		if s.ms.all || s.ms.bm.Contains(numberOfOrderKey(s.ord, key)) {
			return key
		}
	}
	return nil
}

func (s *indexSeq) step() []byte {
	if s.backward {
		k, _ := s.c.Prev()
		return k
	}
	k, _ := s.c.Next()
	return k
}

func (s *indexSeq) first(from []byte, backward bool) []byte {
	s.backward = backward
	if from == nil {
		from = s.dateStart(backward)
	}
	if !backward {
		k, _ := s.c.Seek(append([]byte{s.ord}, from...))
		return s.accept(k)
	}
	var k []byte
	if from == nil {
		k, _ = s.c.Seek([]byte{s.ord + 1})
	} else {
		k, _ = s.c.Seek(append(append([]byte{s.ord}, from...), 0xff))
	}
	if k == nil {
		k, _ = s.c.Last()
	} else {
		k, _ = s.c.Prev()
	}
	for k != nil && len(k) > 0 && k[0] == s.ord && from != nil && bytes.Compare(k[1:], from) > 0 {
		k, _ = s.c.Prev()
	}
	return s.accept(k)
}

// dateStart lets a date-ordered scan of a date-bounded filter begin at the
// bound instead of at the end of the index.
func (s *indexSeq) dateStart(backward bool) []byte {
	var bound *uint32
	switch {
	case s.ord == ordDateAsc && !backward, s.ord == ordDateDesc && backward:
		bound = s.ms.dateFrom
	case s.ord == ordDateDesc && !backward, s.ord == ordDateAsc && backward:
		bound = s.ms.dateTo
	}
	if bound == nil {
		return nil
	}
	d := *bound
	if s.ord == ordDateDesc {
		d = ^d
	}
	if backward {
		return append(append([]byte{0}, u32key(d)...), 0xff, 0xff, 0xff, 0xff)
	}
	return append([]byte{0}, u32key(d)...)
}

func (s *indexSeq) next() []byte { return s.accept(s.step()) }

// memSeq orders a small set in memory from the sort keys.
type memSeq struct {
	keys     [][]byte
	i        int
	backward bool
}

func newMemSeq(tx *bolt.Tx, ord byte, bm *roaring.Bitmap) *memSeq {
	sb := tx.Bucket(bucketSortKeys)
	s := &memSeq{keys: make([][]byte, 0, bm.GetCardinality())}
	it := bm.Iterator()
	for it.HasNext() {
		n := it.Next()
		s.keys = append(s.keys, orderKey(ord, n, decodeSortKey(sb.Get(u32key(n)))))
	}
	sort.Slice(s.keys, func(i, j int) bool { return bytes.Compare(s.keys[i], s.keys[j]) < 0 })
	return s
}

func (s *memSeq) first(from []byte, backward bool) []byte {
	s.backward = backward
	if !backward {
		s.i = 0
		if from != nil {
			s.i = sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], from) >= 0 })
		}
	} else {
		s.i = len(s.keys) - 1
		if from != nil {
			s.i = sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], from) > 0 }) - 1
		}
	}
	return s.cur()
}

func (s *memSeq) cur() []byte {
	if s.i < 0 || s.i >= len(s.keys) {
		return nil
	}
	return s.keys[s.i]
}

func (s *memSeq) next() []byte {
	if s.backward {
		s.i--
	} else {
		s.i++
	}
	return s.cur()
}

// Facets counts the terms of the given kinds among the matching incidents.
func (db *DB) Facets(ctx context.Context, f incidentlib.IncidentFilter, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	if len(kinds) == 0 {
		kinds = incidentlib.TermKinds
	}
	var out []incidentlib.Facet
	err := db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := db.match(tx, f)
		if err != nil {
			return err
		}
		for _, kind := range kinds {
			if !kind.IsValid() {
				return incidentlib.Errorf(incidentlib.EINVALID, "unknown taxonomy kind %q", kind)
			}
			facet := incidentlib.Facet{Kind: kind, Counts: []incidentlib.TermCount{}}
			for _, t := range db.tax.Kind(kind) {
				p := readPosting(tx, postTerm(kind, t.Slug))
				var c uint64
				if ms.all {
					c = p.GetCardinality()
				} else {
					c = ms.bm.AndCardinality(p)
				}
				if c > 0 {
					facet.Counts = append(facet.Counts, incidentlib.TermCount{Term: t, Count: int(c)})
				}
			}
			sort.SliceStable(facet.Counts, func(i, j int) bool { return facet.Counts[i].Count > facet.Counts[j].Count })
			out = append(out, facet)
		}
		return nil
	})
	return out, err
}

// Years counts the matching incidents per year.
func (db *DB) Years(ctx context.Context, f incidentlib.IncidentFilter) ([]incidentlib.YearCount, error) {
	out := []incidentlib.YearCount{}
	err := db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := db.match(tx, f)
		if err != nil {
			return err
		}
		c := tx.Bucket(bucketPostings).Cursor()
		for k, v := c.Seek([]byte(prefixYear)); k != nil && bytes.HasPrefix(k, []byte(prefixYear)); k, v = c.Next() {
			y, ok := yearOfPosting(string(k))
			if !ok {
				continue
			}
			p := roaring.New()
			if _, err := p.FromBuffer(v); err != nil {
				return err
			}
			var n uint64
			if ms.all {
				n = p.GetCardinality()
			} else {
				n = ms.bm.AndCardinality(p)
			}
			if n > 0 {
				out = append(out, incidentlib.YearCount{Year: y, Count: int(n)})
			}
		}
		return nil
	})
	return out, err
}

// RecurrenceIDs returns, for each id, the ids of its recurrences.
func (db *DB) RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error) {
	out := make([][]string, len(ids))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		links := newLinkReader(tx, bucketRecurrences)
		for i, id := range ids {
			n, ok := incidentlib.ParseID(id)
			if !ok {
				continue
			}
			for _, s := range links.sources(n) {
				out[i] = append(out[i], incidentlib.FormatID(s))
			}
		}
		return nil
	})
	return out, err
}

// CountIncidentsBy counts the incidents of each term or organization.
func (db *DB) CountIncidentsBy(ctx context.Context, keys []incidentlib.CountKey) ([]int, error) {
	out := make([]int, len(keys))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPostings).Cursor()
		for i, k := range keys {
			name := postTerm(incidentlib.TermKind(k.Kind), k.Slug)
			if k.Kind == incidentlib.CountKindOrganization {
				name = postOrg(k.Slug)
			}
			out[i] = int(postingCardinality(c, name))
		}
		return nil
	})
	return out, err
}

// FindOrganizationsBySlugs returns organizations in the order of slugs.
func (db *DB) FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*incidentlib.Organization, error) {
	out := make([]*incidentlib.Organization, len(slugs))
	err := db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOrgs).Cursor()
		for i, s := range slugs {
			if v := seekGet(c, []byte(s)); v != nil {
				o, err := db.orgs.decode(s, v)
				if err != nil {
					return err
				}
				out[i] = o
			}
		}
		return nil
	})
	return out, err
}

// FindOrganizations returns one page of organizations ordered by slug.
// Cursors are the slug, base64url encoded.
func (db *DB) FindOrganizations(ctx context.Context, p incidentlib.PageArgs) (*incidentlib.OrganizationPage, error) {
	n, backward, err := pageSize(p)
	if err != nil {
		return nil, err
	}
	dec := func(s *string) ([]byte, error) {
		if s == nil {
			return nil, nil
		}
		b, err := decodeOrgCursor(*s)
		return b, err
	}
	after, err := dec(p.After)
	if err != nil {
		return nil, err
	}
	before, err := dec(p.Before)
	if err != nil {
		return nil, err
	}
	page := &incidentlib.OrganizationPage{}
	err = db.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOrgs)
		page.TotalCount = b.Stats().KeyN
		seq := &bucketSeq{c: b.Cursor()}
		keys, hasMore, hasBeyond := collect(seq, after, before, n, backward)
		if backward {
			page.HasPreviousPage, page.HasNextPage = hasMore, hasBeyond
		} else {
			page.HasNextPage, page.HasPreviousPage = hasMore, hasBeyond
		}
		for _, k := range keys {
			o, err := db.orgs.decode(string(k), b.Get(k))
			if err != nil {
				return err
			}
			page.Organizations = append(page.Organizations, o)
			page.Cursors = append(page.Cursors, encodeOrgCursor(k))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

func encodeOrgCursor(slug []byte) string { return encodeCursor('o', slug) }

func decodeOrgCursor(s string) ([]byte, error) {
	b, err := decodeCursorRaw(s)
	if err != nil || len(b) < 3 || b[1] != 'o' {
		return nil, incidentlib.Errorf(incidentlib.EBADCURSOR, "cursor %q is malformed", s)
	}
	return b[2:], nil
}

// bucketSeq walks every key of a bucket.
type bucketSeq struct {
	c        *bolt.Cursor
	backward bool
}

func (s *bucketSeq) first(from []byte, backward bool) []byte {
	s.backward = backward
	var k []byte
	switch {
	case !backward && from == nil:
		k, _ = s.c.First()
	case !backward:
		k, _ = s.c.Seek(from)
	case from == nil:
		k, _ = s.c.Last()
	default:
		k, _ = s.c.Seek(from)
		if k == nil {
			k, _ = s.c.Last()
		} else if !bytes.Equal(k, from) {
			k, _ = s.c.Prev()
		}
	}
	return k
}

func (s *bucketSeq) next() []byte {
	var k []byte
	if s.backward {
		k, _ = s.c.Prev()
	} else {
		k, _ = s.c.Next()
	}
	return k
}

// orgCache keeps organizations decoded, each with the stored bytes it was
// decoded from: an entry is used only while the store holds the same bytes,
// so a write needs no invalidation. Callers share the returned values and
// must not change them. Organizations are few (one per slug); past
// maxCachedOrgs the cache starts again.
type orgCache struct {
	mu sync.RWMutex
	m  map[string]cachedOrg
}

type cachedOrg struct {
	raw []byte
	org *incidentlib.Organization
}

const maxCachedOrgs = 50_000

func (c *orgCache) decode(slug string, v []byte) (*incidentlib.Organization, error) {
	c.mu.RLock()
	e, ok := c.m[slug]
	c.mu.RUnlock()
	if ok && bytes.Equal(e.raw, v) {
		return e.org, nil
	}
	o := new(incidentlib.Organization)
	if err := json.Unmarshal(v, o); err != nil {
		return nil, fmt.Errorf("storage: organization %q is corrupt: %w", slug, err)
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedOrgs {
		c.m = map[string]cachedOrg{}
	}
	c.m[slug] = cachedOrg{raw: bytes.Clone(v), org: o}
	c.mu.Unlock()
	return o, nil
}
