package storage

import (
	"bytes"
	"context"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// FindIncidentsByIDs returns the incidents in the order of ids, nil where
// an id is unknown or malformed, reading in one transaction.
func (st Incidents) FindIncidentsByIDs(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
	return findEach(ctx, st.db, ids, func(tx *bolt.Tx) func(string) (*incidentlib.Incident, error) {
		rr := st.db.recordReaderIn(ctx, tx) // one cursor for every record (readpath.go)
		return func(id string) (*incidentlib.Incident, error) {
			n, ok := incidentlib.ParseID(id)
			if !ok {
				return nil, nil
			}
			inc, err := rr.get(n)
			if inc == nil && err == nil { // merged away into another incident?
				if to, ok := alias(tx, n); ok {
					return rr.get(to)
				}
			}
			return inc, err
		}
	})
}

// CountIncidents returns how many incidents match f.
func (st Incidents) CountIncidents(ctx context.Context, f incidentlib.IncidentFilter) (int, error) {
	var count int
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := st.db.matchOf(ctx, tx, f)
		if err != nil {
			return err
		}
		count = int(ms.card()) // counted, not built (lazymatch.go)
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

// smallSet is the size over which a filtered page is never ordered in
// memory from the sort keys; under it, sortsInMemory decides (pagepath.go).
var smallSet = 4096

// FindIncidents returns one page of the incidents that match f in order.
func (st Incidents) FindIncidents(ctx context.Context, f incidentlib.IncidentFilter, o incidentlib.IncidentOrder, p incidentlib.PageArgs) (*incidentlib.IncidentPage, error) {
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
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := st.db.matchOf(ctx, tx, f)
		if err != nil {
			return err
		}
		// One evaluation serves the count and the page: the count is read
		// from the postings without building the set, and the page is
		// walked asking each posting, or the set is built when that is
		// cheaper (lazymatch.go).
		page.TotalCount = int(ms.card())
		var seq orderedSeq
		if !ms.all {
			library := postingCardinality(tx.Bucket(bucketPostings).Cursor(), postAll)
			if sortsInMemory(page.TotalCount, n, library) { // pagepath.go
				seq = newMemSeq(tx, ord, ms.set())
			} else if !ms.walksParts(n, library) {
				ms.set()
			}
		}
		if seq == nil {
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

// Facets counts the terms of the given kinds among the matching incidents.
func (st Incidents) Facets(ctx context.Context, f incidentlib.IncidentFilter, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	var out []incidentlib.Facet
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := st.db.matchOf(ctx, tx, f)
		if err != nil {
			return err
		}
		out, err = st.db.facetsIn(tx, kinds, ms.count)
		return err
	})
	return out, err
}

// Years counts the matching incidents per year.
func (st Incidents) Years(ctx context.Context, f incidentlib.IncidentFilter) ([]incidentlib.YearCount, error) {
	var out []incidentlib.YearCount
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := st.db.matchOf(ctx, tx, f)
		if err != nil {
			return err
		}
		out, err = yearsIn(tx, ms.count)
		return err
	})
	return out, err
}

// facetsIn counts the terms of the given kinds (every kind when kinds is
// empty) in tx: count gives how many incidents of a term's posting are in
// the set counted.
func (db *DB) facetsIn(tx *bolt.Tx, kinds []incidentlib.TermKind, count func(posting *roaring.Bitmap) uint64) ([]incidentlib.Facet, error) {
	if len(kinds) == 0 {
		kinds = incidentlib.TermKinds
	}
	var out []incidentlib.Facet
	for _, kind := range kinds {
		if !kind.IsValid() {
			return nil, incidentlib.Errorf(incidentlib.EINVALID, "unknown taxonomy kind %q", kind)
		}
		facet := incidentlib.Facet{Kind: kind, Counts: []incidentlib.TermCount{}}
		for _, t := range db.Taxonomies().Taxonomy().Kind(kind) {
			if c := count(readPosting(tx, postTerm(kind, t.Slug))); c > 0 {
				facet.Counts = append(facet.Counts, incidentlib.TermCount{Term: t, Count: int(c)})
			}
		}
		sort.SliceStable(facet.Counts, func(i, j int) bool { return facet.Counts[i].Count > facet.Counts[j].Count })
		out = append(out, facet)
	}
	return out, nil
}

// yearsIn counts incidents per year in tx, oldest first, as facetsIn
// counts terms.
func yearsIn(tx *bolt.Tx, count func(posting *roaring.Bitmap) uint64) ([]incidentlib.YearCount, error) {
	out := []incidentlib.YearCount{}
	c := tx.Bucket(bucketPostings).Cursor()
	for k, v := c.Seek([]byte(prefixYear)); k != nil && bytes.HasPrefix(k, []byte(prefixYear)); k, v = c.Next() {
		y, ok := yearOfPosting(string(k))
		if !ok {
			continue
		}
		p := roaring.New()
		if _, err := p.FromBuffer(v); err != nil {
			return nil, err
		}
		if n := count(p); n > 0 {
			out = append(out, incidentlib.YearCount{Year: y, Count: int(n)})
		}
	}
	return out, nil
}

// RecurrenceIDs returns, for each id, the ids of its recurrences that
// lists show by default (listed.go).
func (st Incidents) RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error) {
	return st.db.listedSources(ctx, ids, bucketRecurrences, false)
}

// CountIncidentsBy counts the incidents of each term or organization.
func (st Incidents) CountIncidentsBy(ctx context.Context, keys []incidentlib.CountKey) ([]int, error) {
	out := make([]int, len(keys))
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPostings).Cursor()
		// Unlisted (withdrawn) incidents leave the counts as they leave
		// lists (listed.go).
		unlisted := unlistedSet(tx)
		for i, k := range keys {
			name := postTerm(incidentlib.TermKind(k.Kind), k.Slug)
			if k.Kind == incidentlib.CountKindOrganization {
				name = postOrg(k.Slug)
			}
			out[i] = int(listedCount(tx, c, name, unlisted))
		}
		return nil
	})
	return out, err
}
