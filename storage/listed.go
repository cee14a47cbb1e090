package storage

import (
	"slices"

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
	return unionOf(bms) // match.go
}

// listedCount is how many listed incidents the posting name holds, given
// unlisted (unlistedSet) and a cursor c on the postings bucket.
func listedCount(tx *bolt.Tx, c *bolt.Cursor, name string, unlisted *roaring.Bitmap) uint64 {
	if unlisted.IsEmpty() {
		return postingCardinality(c, name)
	}
	bm := readPosting(tx, name)
	return bm.GetCardinality() - bm.AndCardinality(unlisted)
}

// hasRecurrencesSet is the incidents some listed incident is a recurrence
// of: the hasRecurrences posting (kept by the writes, counting every
// recurrence) less the incidents whose recurrences are all unlisted, so
// that the filter hasRecurrences agrees with recurrences, which shows the
// listed ones. It reads the record of each unlisted recurrence (few).
// The bitmap is the caller's own, valid inside tx only.
func (db *DB) hasRecurrencesSet(tx *bolt.Tx) (*roaring.Bitmap, error) {
	p := readPosting(tx, postHasRec)
	un := roaring.And(unlistedSet(tx), readPosting(tx, postRecurrence))
	if un.IsEmpty() {
		return p, nil
	}
	p = p.Clone() // it points into the file
	listed := listedSet(tx)
	links := newLinkReader(tx, bucketRecurrences)
	for it := un.Iterator(); it.HasNext(); {
		inc, err := db.getIncident(tx, it.Next())
		if err != nil {
			return nil, err
		}
		if inc == nil {
			continue
		}
		t, ok := incidentlib.ParseID(inc.RecurrenceOf)
		if ok && !slices.ContainsFunc(links.sources(t), listed.Contains) {
			p.Remove(t)
		}
	}
	return p, nil
}
