package storage

import (
	"context"

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
func (st Incidents) MatchSet(ctx context.Context, f incidentlib.IncidentFilter) (*roaring.Bitmap, error) {
	var out *roaring.Bitmap
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		ms, err := st.db.match(tx, f)
		if err != nil {
			return err
		}
		out = ms.owned() // a clone when the set is a posting, which points into the file
		return nil
	})
	return out, err
}

// FacetsOf counts the terms of the given kinds (all kinds when kinds is
// empty) among the incidents of set that are in the store, like Facets.
func (st Incidents) FacetsOf(ctx context.Context, set *roaring.Bitmap, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	var out []incidentlib.Facet
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = st.db.facetsIn(tx, kinds, set.AndCardinality)
		return err
	})
	return out, err
}

// YearsOf counts the incidents of set per year, oldest first, like Years.
func (st Incidents) YearsOf(ctx context.Context, set *roaring.Bitmap) ([]incidentlib.YearCount, error) {
	var out []incidentlib.YearCount
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = yearsIn(tx, set.AndCardinality)
		return err
	})
	return out, err
}
