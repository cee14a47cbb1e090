package incidentlib

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2"
)

// Aggregates over sets of incidents for dashboards, answered from the
// store's indexes (postings of terms, years, organizations and durations),
// never by reading every record. A set is what IncidentSets.MatchSet
// gives for a filter: the incidents lists show for it.

// YearTermCount is how many incidents of a set happened in a year and
// carry a term.
type YearTermCount struct {
	Year  int
	Term  TermKey
	Count int
}

// PairCount is how many incidents of a set carry both a row term and a
// column term.
type PairCount struct {
	Row, Column TermKey
	Count       int
}

// OrganizationCount is how many incidents of a set an organization is the
// affected organization of.
type OrganizationCount struct {
	Slug  string
	Count int
}

// DurationStats summarise one timeline duration over the incidents of a
// set that state it: how many do, the nearest-rank 50th and 90th
// percentiles (the smallest value at or above which lie at least half, 90%
// of them) and the largest, in whole seconds. The percentiles and the
// largest are nil when no incident states the duration.
type DurationStats struct {
	Count         int
	P50, P90, Max *int
}

// Durations are the DurationStats of the two timeline durations.
type Durations struct {
	DetectedAfter, ResolvedAfter DurationStats
}

// OrganizationOrderField is what organizations are ordered by.
type OrganizationOrderField string

// Organization order fields; SLUG is the default order.
const (
	OrgOrderSlug           OrganizationOrderField = "SLUG"
	OrgOrderName           OrganizationOrderField = "NAME"
	OrgOrderIncidentCount  OrganizationOrderField = "INCIDENT_COUNT"
	OrgOrderLatestIncident OrganizationOrderField = "LATEST_INCIDENT"
)

// OrganizationQuery selects and orders organizations. Ties are broken by
// slug ascending; organizations without a value (no dated incident for
// LATEST_INCIDENT) come last in either direction.
type OrganizationQuery struct {
	// NameStartsWith keeps the organizations whose name starts with it,
	// case-insensitively; empty keeps all.
	NameStartsWith string
	Field          OrganizationOrderField
	// Direction defaults to ASC for SLUG and NAME, DESC for
	// INCIDENT_COUNT and LATEST_INCIDENT.
	Direction Direction
}

// DefaultTopOrganizations and MaxTopOrganizations bound
// IncidentAggregates.TopOrganizationsOf.
const (
	DefaultTopOrganizations = 10
	MaxTopOrganizations     = 100
)

// IncidentAggregates count sets of incidents from the indexes.
type IncidentAggregates interface {
	IncidentSets

	// YearTermCountsOf counts the incidents of set per year and term of
	// kind: an incident counts once for each term of the kind it carries;
	// undated incidents and those without a term of the kind are left out,
	// and so are cells of zero. Ordered by year, then term slug. Returns
	// EINVALID for an unknown kind.
	YearTermCountsOf(ctx context.Context, set *roaring.Bitmap, kind TermKind) ([]YearTermCount, error)

	// PairCountsOf counts the incidents of set that carry both a term of
	// rows and a term of columns, for every such pair (zero cells left
	// out), ordered by row slug, then column slug. With rows equal to
	// columns, a term paired with itself counts the incidents carrying it.
	// Returns EINVALID for an unknown kind.
	PairCountsOf(ctx context.Context, set *roaring.Bitmap, rows, columns TermKind) ([]PairCount, error)

	// TopOrganizationsOf returns the first organizations by how many
	// incidents of set they are the affected organization of, most first,
	// ties by slug; none with zero. first is 1 to MaxTopOrganizations,
	// else EINVALID.
	TopOrganizationsOf(ctx context.Context, set *roaring.Bitmap, first int) ([]OrganizationCount, error)

	// DurationsOf summarises the timeline durations of the incidents of
	// set, from an index of durations kept by every write.
	DurationsOf(ctx context.Context, set *roaring.Bitmap) (*Durations, error)

	// FindOrganizationsBy returns one page of the organizations q selects
	// in its order. Returns EINVALID for a bad page size or order,
	// EBADCURSOR for a malformed cursor or one made for another order.
	FindOrganizationsBy(ctx context.Context, q OrganizationQuery, page PageArgs) (*OrganizationPage, error)
}
