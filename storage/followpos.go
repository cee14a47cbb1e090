package storage

import (
	"context"

	"github.com/incidentlib/incidentlib"
)

// AdvanceAppliedSeq moves a follower's position from from to to without
// applying a change: the primary's sequence moved by changes its change
// feed does not carry (those of its taxonomy, applied with
// ApplyTaxonomyChanges), and a complete page of its feed read at sequence
// to held nothing after from. from must be the stored position (AppliedSeq),
// else ECONFLICT and nothing is written; to below from is EINVALID.
// Returns the new position.
func (st Incidents) AdvanceAppliedSeq(ctx context.Context, from, to uint64) (uint64, error) {
	switch {
	case to < from:
		return from, incidentlib.Errorf(incidentlib.EINVALID, "the position %d is below the stored position %d", to, from)
	case to == from:
		return from, nil
	}
	err := st.db.update(ctx, func(w *writeTx) error {
		meta := w.tx.Bucket(bucketMeta)
		if cur := getU64(meta.Get(metaFollowSeq)); cur != from {
			return incidentlib.Errorf(incidentlib.ECONFLICT,
				"the store has applied its primary's changes up to %d, not %d", cur, from)
		}
		return meta.Put(metaFollowSeq, u64key(to))
	})
	if err != nil {
		return from, err
	}
	return to, nil
}
