package storage

import "github.com/incidentlib/incidentlib"

// An editor's import (ImportOptions.Draft): the review belongs to the
// store, as for an upsert (mutate.go).

// draftBefore makes inc's history members and review those of the stored
// record old, so that a record that differs only in them is unchanged.
func draftBefore(inc, old *incidentlib.Incident) {
	inc.Version, inc.ReviewState, inc.CreatedAt = 0, "", ""
	if old != nil {
		inc.Review.WrittenBy, inc.Review.ReviewedAt, inc.Review.ReviewedBy = old.Review.WrittenBy, old.Review.ReviewedAt, old.Review.ReviewedBy
		return
	}
	inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
}

// draftAfter makes a new or changed record a DRAFT needing a new review.
func draftAfter(inc *incidentlib.Incident) {
	inc.Review.ReviewedAt, inc.Review.ReviewedBy = "", ""
	inc.ReviewState = incidentlib.ReviewDraft
}
