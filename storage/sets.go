package storage

import (
	"bytes"
	"context"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// Sets of incidents as roaring bitmaps of incident numbers
// (incidentlib.ParseID), for callers that combine the store's filters
// with sets of their own, such as the search index.

// MatchSet returns the numbers of the incidents that match f, exactly as
// FindIncidents selects them. The bitmap is the caller's own. Returns
// EINVALID for a bad filter.
func (db *DB) MatchSet(ctx context.Context, f incidentlib.IncidentFilter) (*roaring.Bitmap, error) {
	var out *roaring.Bitmap
	err := db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := db.match(tx, f)
		if err != nil {
			return err
		}
		out = ms.bm.Clone() // ms.bm may point into the file
		return nil
	})
	return out, err
}

// FacetsOf counts the terms of the given kinds (all kinds when kinds is
// empty) among the incidents of set that are in the store, like Facets.
func (db *DB) FacetsOf(ctx context.Context, set *roaring.Bitmap, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	if len(kinds) == 0 {
		kinds = incidentlib.TermKinds
	}
	var out []incidentlib.Facet
	err := db.view(ctx, func(tx *bolt.Tx) error {
		for _, kind := range kinds {
			if !kind.IsValid() {
				return incidentlib.Errorf(incidentlib.EINVALID, "unknown taxonomy kind %q", kind)
			}
			facet := incidentlib.Facet{Kind: kind, Counts: []incidentlib.TermCount{}}
			for _, t := range db.tax.Kind(kind) {
				if c := set.AndCardinality(readPosting(tx, postTerm(kind, t.Slug))); c > 0 {
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

// YearsOf counts the incidents of set per year, oldest first, like Years.
func (db *DB) YearsOf(ctx context.Context, set *roaring.Bitmap) ([]incidentlib.YearCount, error) {
	out := []incidentlib.YearCount{}
	err := db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPostings).Cursor()
		for k, _ := c.Seek([]byte(prefixYear)); k != nil && bytes.HasPrefix(k, []byte(prefixYear)); k, _ = c.Next() {
			y, ok := yearOfPosting(string(k))
			if !ok {
				continue
			}
			if n := set.AndCardinality(readPosting(tx, string(k))); n > 0 {
				out = append(out, incidentlib.YearCount{Year: y, Count: int(n)})
			}
		}
		return nil
	})
	return out, err
}
