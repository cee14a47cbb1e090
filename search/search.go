package search

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/tracing"
)

var _ incidentlib.SearchService = (*Index)(nil)

// maxOffset bounds how deep pages go: a page ranks offset+size hits.
const maxOffset = 10_000

// prepared is a validated search.
type prepared struct {
	clauses     []clause
	c           *compiled
	lang        incidentlib.Lang
	filter      incidentlib.IncidentFilter
	filterJSON  string
	fingerprint uint32
	tr          *translator // the glossary the query was compiled with; nil for none
}

func (x *Index) prepare(ctx context.Context, q incidentlib.SearchQuery) (*prepared, error) {
	clauses, c, tr, err := x.compileQuery(q.Query, q.Lang, func() (*translator, error) { return x.translator(ctx) })
	if err != nil {
		return nil, err
	}
	var lang incidentlib.Lang
	if q.Lang != nil {
		lang = *q.Lang
	}
	filterJSON, _ := json.Marshal(q.Filter)
	h := fnv.New32a()
	h.Write([]byte(q.Query))
	h.Write([]byte{0})
	h.Write([]byte(lang))
	h.Write([]byte{0})
	h.Write(filterJSON)
	if tr != nil {
		// A cursor is a position in one glossary's ranking.
		h.Write(binary.BigEndian.AppendUint64(nil, tr.version))
	}
	return &prepared{clauses: clauses, c: c, lang: lang, filter: q.Filter, filterJSON: string(filterJSON),
		fingerprint: h.Sum32(), tr: tr}, nil
}

// Cursors are opaque: a version byte, the search's fingerprint and the
// offset of the hit, base64url without padding.
const cursorVersion = 1

func encodeCursor(fp uint32, offset int) string {
	b := [9]byte{cursorVersion}
	binary.BigEndian.PutUint32(b[1:], fp)
	binary.BigEndian.PutUint32(b[5:], uint32(offset))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func decodeCursor(fp uint32, s string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 9 || b[0] != cursorVersion {
		return 0, incidentlib.FieldErrorf(incidentlib.EBADCURSOR, []string{"after"}, "cursor %q is malformed", s)
	}
	if binary.BigEndian.Uint32(b[1:]) != fp {
		return 0, incidentlib.FieldErrorf(incidentlib.EBADCURSOR, []string{"after"}, "cursor %q was made for another search", s)
	}
	off := binary.BigEndian.Uint32(b[5:])
	if off >= maxOffset {
		return 0, incidentlib.FieldErrorf(incidentlib.EBADCURSOR, []string{"after"}, "cursor %q is malformed", s)
	}
	return int(off), nil
}

// pageArgs validates the page: forward only, first at most MaxPageSize.
func pageArgs(p incidentlib.PageArgs, fp uint32) (offset, size int, err error) {
	if p.Last != nil || p.Before != nil {
		return 0, 0, incidentlib.Errorf(incidentlib.EINVALID, "search pages go forward only: give first and after")
	}
	size = incidentlib.DefaultPageSize
	if p.First != nil {
		size = *p.First
	}
	if size < 0 {
		return 0, 0, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"first"}, "first must not be negative, got %d", size)
	}
	if size > incidentlib.MaxPageSize {
		return 0, 0, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"first"}, "first may be at most %d, got %d", incidentlib.MaxPageSize, size)
	}
	if p.After != nil {
		after, err := decodeCursor(fp, *p.After)
		if err != nil {
			return 0, 0, err
		}
		offset = after + 1
	}
	if offset+size > maxOffset {
		return 0, 0, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"after"}, "search results go %d deep at most; narrow the query or the filter", maxOffset)
	}
	return offset, size, nil
}

// Search returns one page of the incidents that match q, best first. See
// incidentlib.SearchService.
func (x *Index) Search(ctx context.Context, q incidentlib.SearchQuery, page incidentlib.PageArgs) (*incidentlib.SearchPage, error) {
	ctx, span := tracing.Start(ctx, "search")
	defer span.End()
	p, err := x.prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	offset, size, err := pageArgs(page, p.fingerprint)
	if err != nil {
		return nil, err
	}
	if err := x.turnCaughtUp(ctx); err != nil {
		return nil, err
	}
	defer x.turns.Release(1)
	keepBits, err := x.filterBits(ctx, p)
	if err != nil {
		return nil, err
	}
	if keepBits != nil && len(keepBits) == 0 {
		return &incidentlib.SearchPage{Hits: []incidentlib.SearchHit{}, HasPreviousPage: offset > 0, Suggestions: []string{}}, nil
	}
	x.mu.RLock()
	hits, total, direct := rankTiers(x.mem, p.c, keepBits, offset, size)
	// A hit of the query's own words is highlighted for them alone; one
	// found through a translation, for both (glossary.go).
	cs := make([]*compiled, len(hits))
	masks := make([]uint16, len(hits))
	for i, h := range hits {
		cs[i] = p.c
		if i < direct && p.c.direct != nil {
			cs[i] = p.c.direct
		}
		masks[i] = x.mem.fieldMask(cs[i], h.slot)
	}
	suggestions := []string{}
	if total == 0 {
		suggestions = suggest(x.mem, p, keepBits, x.spelling(ctx))
	}
	x.mu.RUnlock()
	out := &incidentlib.SearchPage{
		Hits:            make([]incidentlib.SearchHit, 0, len(hits)),
		TotalCount:      total,
		HasNextPage:     offset+size < total,
		HasPreviousPage: offset > 0,
		Suggestions:     suggestions,
	}
	nums := make([]uint32, len(hits))
	for i, h := range hits {
		nums[i] = h.num
	}
	recs, err := x.db.RecordsByNumber(ctx, nums)
	if err != nil {
		return nil, err
	}
	a := getAnalyzer()
	defer putAnalyzer(a)
	for i, h := range hits {
		inc := recs[i].Decoded
		if inc == nil {
			if recs[i].Raw == nil { // deleted since the index read
				continue
			}
			if inc, err = textsOf(recs[i].Raw); err != nil {
				return nil, err
			}
		}
		out.Hits = append(out.Hits, incidentlib.SearchHit{
			ID:         incidentlib.FormatID(h.num),
			Score:      h.score,
			Cursor:     encodeCursor(p.fingerprint, offset+i),
			Highlights: highlights(a, inc, cs[i], p.lang, masks[i]),
		})
	}
	return out, nil
}

// turn waits until fewer than Options.Concurrency searches run, first
// come first served, or ctx ends; the caller releases x.turns.
func (x *Index) turn(ctx context.Context) error {
	x.waiting.Add(1)
	defer x.waiting.Add(-1)
	if err := x.turns.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("search: waiting for a turn: %w", err)
	}
	return nil
}

// turnCaughtUp waits for a turn (turn), then catches the index up with
// the store; unless it fails, the caller releases x.turns.
func (x *Index) turnCaughtUp(ctx context.Context) error {
	if err := x.turn(ctx); err != nil {
		return err
	}
	if err := x.CatchUp(ctx); err != nil {
		x.turns.Release(1)
		return err
	}
	return nil
}

// Waiting is how many searches wait for their turn now.
func (x *Index) Waiting() int { return int(x.waiting.Load()) }

// SearchFacets counts terms over every match of q. See
// incidentlib.SearchService.
func (x *Index) SearchFacets(ctx context.Context, q incidentlib.SearchQuery, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	for _, k := range kinds {
		if !k.IsValid() {
			return nil, incidentlib.Errorf(incidentlib.EINVALID, "unknown taxonomy kind %q", k)
		}
	}
	set, err := x.matchSet(ctx, q)
	if err != nil {
		return nil, err
	}
	return x.db.FacetsOf(ctx, set, kinds)
}

// SearchYears counts every match of q per year. See
// incidentlib.SearchService.
func (x *Index) SearchYears(ctx context.Context, q incidentlib.SearchQuery) ([]incidentlib.YearCount, error) {
	set, err := x.matchSet(ctx, q)
	if err != nil {
		return nil, err
	}
	return x.db.YearsOf(ctx, set)
}

// matchSet returns the numbers of every incident that matches q, from a
// small cache keyed by the search and the sequences of index and store.
func (x *Index) matchSet(ctx context.Context, q incidentlib.SearchQuery) (*roaring.Bitmap, error) {
	p, err := x.prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := x.CatchUp(ctx); err != nil {
		return nil, err
	}
	key := strconv.FormatUint(uint64(p.fingerprint), 16) + "/" + strconv.FormatUint(x.Seq(), 10) + "/" +
		strconv.FormatUint(x.db.Seq(), 10) + "/" + q.Query
	if set, ok := x.cache.Get(key); ok {
		return set, nil
	}
	if err := x.turn(ctx); err != nil {
		return nil, err
	}
	defer x.turns.Release(1)
	keepBits, err := x.filterBits(ctx, p)
	if err != nil {
		return nil, err
	}
	x.mu.RLock()
	set := roaring.BitmapOf(matchNums(x.mem, p.c, keepBits)...)
	x.mu.RUnlock()
	x.cache.Add(key, set)
	return set, nil
}

// filterBits returns the incidents p's filter selects, as a bitset by
// incident number (empty when it selects none). There is always a filter:
// without one, the store's set of the empty filter leaves out the
// incidents lists leave out (withdrawn ones: incidentlib.UnlistedStates),
// so that a search shows what a list shows. The bitsets of recent
// filters are kept, keyed by the filter and the store's sequence, so a
// filter is read from the store once between two writes; they are
// shared, read only.
func (x *Index) filterBits(ctx context.Context, p *prepared) ([]uint64, error) {
	key := strconv.FormatUint(x.db.Seq(), 10) + "/" + p.filterJSON
	if bits, ok := x.filters.Get(key); ok {
		return bits, nil
	}
	keep, err := x.db.MatchSet(ctx, p.filter)
	if err != nil {
		return nil, err
	}
	bits := []uint64{}
	if !keep.IsEmpty() {
		bits = keep.ToDense()
	}
	x.filters.Add(key, bits)
	return bits, nil
}

// setCache keeps the match sets of recent searches, which facets and
// years of one result share.
type setCache = lru.Cache[string, *roaring.Bitmap]

func newSetCache(n int) *setCache {
	c, _ := lru.New[string, *roaring.Bitmap](n)
	return c
}

// filterCacheSize is how many filters' bitsets filterBits keeps (each one
// bit per incident number: 12.5 kB for 100,000 incidents).
const filterCacheSize = 64

type filterCache = lru.Cache[string, []uint64]

func newFilterCache() *filterCache {
	c, _ := lru.New[string, []uint64](filterCacheSize)
	return c
}
