package storage

import (
	"context"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// applyMerges removes each incident merged away into another, in the
// import's transaction: every link to it now points to the incident that
// absorbed it, and its id is kept as an alias so that it goes on resolving.
func (w *writeTx) applyMerges(merges map[string]string) error {
	if len(merges) == 0 {
		return nil
	}
	defer func(a incidentlib.ChangeAction, c string) { w.action, w.comment = a, c }(w.action, w.comment)
	w.action = incidentlib.ActionMerge
	drops := make([]string, 0, len(merges))
	for d := range merges {
		drops = append(drops, d)
	}
	slices.Sort(drops)
	for _, dropID := range drops {
		keepID := merges[dropID]
		d, ok1 := incidentlib.ParseID(dropID)
		k, ok2 := incidentlib.ParseID(keepID)
		if !ok1 || !ok2 || d == k {
			return incidentlib.Errorf(incidentlib.EINVALID, "cannot merge %s into %s", dropID, keepID)
		}
		if kept, err := w.get(k); err != nil {
			return err
		} else if kept == nil {
			return incidentlib.Errorf(incidentlib.EINVALID, "cannot merge %s into %s: %s is not in the library", dropID, keepID, keepID)
		}
		w.comment = "merged " + dropID + " into " + keepID
		linking, err := w.linking(d)
		if err != nil {
			return err
		}
		for _, src := range linking {
			c := *src
			c.Related = nil
			for _, r := range src.Related {
				if r == dropID {
					r = keepID
				}
				if r != c.ID && !slices.Contains(c.Related, r) {
					c.Related = append(c.Related, r)
				}
			}
			if c.RecurrenceOf == dropID {
				c.RecurrenceOf = keepID
			}
			if c.RecurrenceOf == c.ID {
				c.RecurrenceOf = ""
			}
			if err := w.put(&c); err != nil {
				return err
			}
		}
		if old, err := w.get(d); err != nil {
			return err
		} else if old != nil {
			if err := w.remove(d, old); err != nil {
				return err
			}
		}
		// Aliases pointing at the dropped id move on to the kept one.
		ab := w.tx.Bucket(bucketAliases)
		var moved [][]byte
		_ = ab.ForEach(func(key, v []byte) error {
			if binary.BigEndian.Uint32(v) == d {
				moved = append(moved, append([]byte(nil), key...))
			}
			return nil
		})
		for _, key := range append(moved, u32key(d)) {
			if err := ab.Put(key, u32key(k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// linking returns the incidents other than n whose related or
// recurrence_of names n, in number order, as this transaction holds them.
func (w *writeTx) linking(n uint32) ([]*incidentlib.Incident, error) {
	nums := append(sources(w.tx, bucketRelatedRev, n), sources(w.tx, bucketRecurrences, n)...)
	slices.Sort(nums)
	var out []*incidentlib.Incident
	for _, s := range slices.Compact(nums) {
		if s == n {
			continue
		}
		src, err := w.get(s)
		if err != nil {
			return nil, err
		}
		if src != nil {
			out = append(out, src)
		}
	}
	return out, nil
}

// current re-reads the given records as this transaction now holds them.
func (w *writeTx) current(incs []*incidentlib.Incident) ([]*incidentlib.Incident, error) {
	out := make([]*incidentlib.Incident, 0, len(incs))
	for _, in := range incs {
		n, _ := incidentlib.ParseID(in.ID)
		inc, err := w.get(n)
		if err != nil {
			return nil, err
		}
		if inc != nil {
			out = append(out, inc)
		}
	}
	return out, nil
}

// alias returns the incident number an id merged away resolves to.
func alias(tx *bolt.Tx, n uint32) (uint32, bool) {
	v := tx.Bucket(bucketAliases).Get(u32key(n))
	if len(v) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(v), true
}

// AllIncidents reads every incident in one transaction, in id order (for
// planning an import; never on a request's path).
func (st Incidents) AllIncidents(ctx context.Context) ([]*incidentlib.Incident, error) {
	var out []*incidentlib.Incident
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIncidents).ForEach(func(k, _ []byte) error {
			inc, err := st.db.getIncident(tx, binary.BigEndian.Uint32(k))
			if err != nil {
				return err
			}
			out = append(out, inc)
			return nil
		})
	})
	return out, err
}
