package storage

import (
	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// listedSet is the set of incidents that lists and derived results show
// when a filter does not name an unlisted state: every incident but those
// in incidentlib.UnlistedStates (withdrawn). It is the store's one copy of
// the rule (incidentlib/visibility.go): match (lists, counts, facets,
// years, stats, search, exports, subscriptions), CountIncidentsBy,
// Similar, RecurrenceIDs and RelatedByIDs read it. Valid inside tx only.
func listedSet(tx *bolt.Tx) *roaring.Bitmap {
	ls, _ := listedOf(tx, readPosting(tx, postAll))
	return ls
}

// listedOf is listedSet given all, the all posting; restricted is false
// when no incident is unlisted (ls is then all itself).
func listedOf(tx *bolt.Tx, all *roaring.Bitmap) (ls *roaring.Bitmap, restricted bool) {
	if un := unlistedSet(tx); !un.IsEmpty() {
		return roaring.AndNot(all, un), true
	}
	return all, false
}

// unlistedSet is the union of the postings of incidentlib.UnlistedStates.
func unlistedSet(tx *bolt.Tx) *roaring.Bitmap {
	bms := make([]*roaring.Bitmap, 0, len(incidentlib.UnlistedStates))
	for _, s := range incidentlib.UnlistedStates {
		bms = append(bms, readPosting(tx, postState(s)))
	}
	if len(bms) == 1 {
		return bms[0]
	}
	return roaring.FastOr(bms...)
}
