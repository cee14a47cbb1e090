package model

import "github.com/RoaringBitmap/roaring/v2"

// IncidentStats are the aggregates over the set of incidents a filter
// selects, read once by Query.stats; each field counts from the indexes.
type IncidentStats struct {
	Set   *roaring.Bitmap
	Count int
}

// YearTermCount is how many incidents of a year carry a term.
type YearTermCount struct {
	Year  int
	Term  *TaxonomyTerm
	Count int
}

// PairCount is how many incidents carry a row term and a column term.
type PairCount struct {
	Row    *TaxonomyTerm
	Column *TaxonomyTerm
	Count  int
}

// OrganizationCount is how many incidents an organization is the
// affected organization of.
type OrganizationCount struct {
	Organization *Organization
	Count        int
}

// IncidentDurations are the statistics of the two timeline durations.
type IncidentDurations struct {
	DetectedAfter *DurationStats
	ResolvedAfter *DurationStats
}

// DurationStats summarise one timeline duration, in seconds.
type DurationStats struct {
	Count      int
	P50Seconds *int
	P90Seconds *int
	MaxSeconds *int
}
