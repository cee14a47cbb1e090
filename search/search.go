package search

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/incidentlib/incidentlib"
)

var _ incidentlib.SearchService = (*Index)(nil)

// maxOffset bounds how deep pages go: bleve ranks offset+size hits to
// give a page.
const maxOffset = 10_000

// prepared is a validated search.
type prepared struct {
	c           *compiled
	lang        incidentlib.Lang
	filter      incidentlib.IncidentFilter
	filtered    bool
	fingerprint uint32
}

func (x *Index) prepare(q incidentlib.SearchQuery) (*prepared, error) {
	clauses, err := parse(q.Query)
	if err != nil {
		return nil, err
	}
	var lang incidentlib.Lang
	if q.Lang != nil {
		if !q.Lang.IsValid() {
			return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"lang"}, "unknown language %q", *q.Lang)
		}
		lang = *q.Lang
	}
	c, err := compile(clauses, lang)
	if err != nil {
		return nil, err
	}
	filterJSON, _ := json.Marshal(q.Filter)
	h := fnv.New32a()
	h.Write([]byte(q.Query))
	h.Write([]byte{0})
	h.Write([]byte(lang))
	h.Write([]byte{0})
	h.Write(filterJSON)
	return &prepared{c: c, lang: lang, filter: q.Filter, filtered: string(filterJSON) != emptyFilterJSON,
		fingerprint: h.Sum32()}, nil
}

var emptyFilterJSON = func() string {
	b, _ := json.Marshal(incidentlib.IncidentFilter{})
	return string(b)
}()

// Cursors are opaque: a version byte, the search's fingerprint and the
// offset of the hit, base64url without padding.
const cursorVersion = 1

func encodeCursor(fp uint32, offset int) string {
	b := []byte{cursorVersion}
	b = binary.BigEndian.AppendUint32(b, fp)
	b = binary.BigEndian.AppendUint32(b, uint32(offset))
	return base64.RawURLEncoding.EncodeToString(b)
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
	p, err := x.prepare(q)
	if err != nil {
		return nil, err
	}
	offset, size, err := pageArgs(page, p.fingerprint)
	if err != nil {
		return nil, err
	}
	if err := x.CatchUp(ctx); err != nil {
		return nil, err
	}
	bq := p.c.q
	if p.filtered {
		set, err := x.db.MatchSet(ctx, p.filter)
		if err != nil {
			return nil, err
		}
		if set.IsEmpty() {
			return &incidentlib.SearchPage{Hits: []incidentlib.SearchHit{}, HasPreviousPage: offset > 0}, nil
		}
		bq = &filterQuery{q: bq, keep: set}
	}
	// Rank without term locations (reading them for every match of a
	// common word costs more than the ranking), then read them for the
	// page alone.
	req := bleve.NewSearchRequestOptions(bq, size, offset, false)
	res, err := x.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, searchError(ctx, err)
	}
	locs, err := x.locations(ctx, p.c.q, res.Hits)
	if err != nil {
		return nil, err
	}
	out := &incidentlib.SearchPage{
		Hits:            make([]incidentlib.SearchHit, 0, len(res.Hits)),
		TotalCount:      int(res.Total),
		HasNextPage:     uint64(offset+size) < res.Total,
		HasPreviousPage: offset > 0,
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	incs, err := x.db.FindIncidentsByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, h := range res.Hits {
		if incs[i] == nil { // deleted since the index read
			continue
		}
		out.Hits = append(out.Hits, incidentlib.SearchHit{
			ID:         h.ID,
			Score:      h.Score,
			Cursor:     encodeCursor(p.fingerprint, offset+i),
			Highlights: highlights(incs[i], locs[h.ID], p.lang),
		})
	}
	return out, nil
}

// locations returns where q matched each of hits, by id.
func (x *Index) locations(ctx context.Context, q query.Query, hits bsearch.DocumentMatchCollection) (map[string]bsearch.FieldTermLocationMap, error) {
	out := make(map[string]bsearch.FieldTermLocationMap, len(hits))
	if len(hits) == 0 {
		return out, nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	req := bleve.NewSearchRequestOptions(query.NewConjunctionQuery([]query.Query{query.NewDocIDQuery(ids), q}), len(ids), 0, false)
	req.IncludeLocations = true
	req.Score = "none"
	res, err := x.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, searchError(ctx, err)
	}
	for _, h := range res.Hits {
		out[h.ID] = h.Locations
	}
	return out, nil
}

func searchError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return incidentlib.Errorf(incidentlib.ETIMEOUT, "the request ran out of time")
	}
	return err
}

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
	p, err := x.prepare(q)
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
	fq := &filterQuery{q: p.c.q, record: roaring.New()}
	if p.filtered {
		if fq.keep, err = x.db.MatchSet(ctx, p.filter); err != nil {
			return nil, err
		}
	}
	req := bleve.NewSearchRequestOptions(fq, 0, 0, false)
	req.Score = "none"
	if _, err := x.bi.SearchInContext(ctx, req); err != nil {
		return nil, searchError(ctx, err)
	}
	x.cache.Add(key, fq.record)
	return fq.record, nil
}

// setCache keeps the match sets of recent searches, which facets and
// years of one result share.
type setCache = lru.Cache[string, *roaring.Bitmap]

func newSetCache(n int) *setCache {
	c, _ := lru.New[string, *roaring.Bitmap](n)
	return c
}

// filterQuery passes on the hits of q whose incident is in keep (every hit
// when keep is nil), adding their numbers to record if set. It is how the
// store's filters apply to the index: a hit's id is read from the index
// (cheap: bleve keeps it uncompressed) and looked up in the store's set.
type filterQuery struct {
	q      query.Query
	keep   *roaring.Bitmap
	record *roaring.Bitmap
}

func (f *filterQuery) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, o bsearch.SearcherOptions) (bsearch.Searcher, error) {
	s, err := f.q.Searcher(ctx, r, m, o)
	if err != nil {
		return nil, err
	}
	return searcher.NewFilteringSearcher(ctx, s, func(_ *bsearch.SearchContext, d *bsearch.DocumentMatch) bool {
		id, err := r.ExternalID(d.IndexInternalID)
		if err != nil {
			return false
		}
		n, ok := incidentlib.ParseID(id)
		if !ok || (f.keep != nil && !f.keep.Contains(n)) {
			return false
		}
		if f.record != nil {
			f.record.Add(n)
		}
		return true
	}), nil
}
