package storage

import (
	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/filterexpr"
)

// Set filters: an IncidentFilter with not and or is an expression whose
// nodes are plain filters (matchFields). Every read of a filter comes
// through match, which checks the filter at every depth (filterexpr's
// Validate: bounds, dates, enums), whatever path brought it: lists,
// counts, facets, years, stats, search, the exports, subscriptions.
//
// The semantics (docs/graph.md, "Set filters"): a node selects the AND of
// its plain fields, of the complement of its not, and of the union of its
// or items (an empty or list does not constrain). The nodes are evaluated
// over every incident, withdrawn ones included; the visibility rule
// (listed.go) is applied once, to the whole: an unlisted incident is in
// the result only when it matches the whole expression and also some node
// outside any not (under an even number of them) whose own fields ask for
// it (filterexpr.Asks: reviewStates names WITHDRAWN, or ids). A not never
// brings one in, and one branch's asking does not open another's. For a
// filter without not and or this is the rule of matchFields exactly.

// match evaluates filter f from the indexes, checking it first.
func (db *DB) match(tx *bolt.Tx, f incidentlib.IncidentFilter) (*matchSet, error) {
	if err := filterexpr.Validate(&f); err != nil {
		return nil, err
	}
	if !filterexpr.IsSet(&f) {
		return db.matchFields(tx, f, true)
	}
	ev := exprEval{db: db, tx: tx, all: readPosting(tx, postAll), asked: roaring.New()}
	// The top node's plain fields keep their hints (its date bounds) for
	// an ordered scan: the result is a subset of them.
	top, err := db.matchFields(tx, plainOf(f), false)
	if err != nil {
		return nil, err
	}
	bm, err := ev.value(f, top.set(), false)
	if err != nil {
		return nil, err
	}
	if un := unlistedSet(tx); !un.IsEmpty() {
		bm.AndNot(roaring.AndNot(un, ev.asked))
	}
	top.setTo(bm)
	return top, nil
}

// exprEval evaluates the nodes of one set filter in tx.
type exprEval struct {
	db  *DB
	tx  *bolt.Tx
	all *roaring.Bitmap // the all posting (valid inside tx)
	// asked gathers the incidents that the nodes outside any not, whose
	// own fields ask for unlisted incidents, select.
	asked *roaring.Bitmap
}

// plainOf is n without its not and or.
func plainOf(n incidentlib.IncidentFilter) incidentlib.IncidentFilter {
	n.Not, n.Or = nil, nil
	return n
}

// value is the set node n selects, visibility aside, given plain, the set
// of its own fields (nil: to be read); negated says n is under an odd
// number of nots. The bitmap is new (the caller's own).
func (ev *exprEval) value(n incidentlib.IncidentFilter, plain *roaring.Bitmap, negated bool) (*roaring.Bitmap, error) {
	if plain == nil {
		ms, err := ev.db.matchFields(ev.tx, plainOf(n), false)
		if err != nil {
			return nil, err
		}
		plain = ms.set()
	}
	sets := []*roaring.Bitmap{plain}
	if len(n.Or) > 0 {
		items := make([]*roaring.Bitmap, len(n.Or))
		for i := range n.Or {
			v, err := ev.value(n.Or[i], nil, negated)
			if err != nil {
				return nil, err
			}
			items[i] = v
		}
		sets = append(sets, roaring.FastOr(items...))
	}
	v := roaring.FastAnd(sets...) // a new bitmap, even of one
	if n.Not != nil {
		not, err := ev.value(*n.Not, nil, !negated)
		if err != nil {
			return nil, err
		}
		v.AndNot(not)
	}
	if !negated && filterexpr.Asks(&n) {
		ev.asked.Or(v)
	}
	return v, nil
}
