package incidentlib

import (
	"context"
)

// Organization is an organization incidents happened to. Organizations are
// derived from the incidents' org and org_slug fields.
type Organization struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// ID is the organization's global id, "org:SLUG".
func (o *Organization) ID() string { return "org:" + o.Slug }

// IncidentFilter selects incidents. Nil or empty fields do not constrain.
// Within one slug list the values are ORed; across fields they are ANDed.
// A slug that matches nothing gives an empty result, not an error.
type IncidentFilter struct {
	IDs           []string
	Organizations []string
	Domains       []string
	Symptoms      []string
	Components    []string
	RootCauses    []string
	Contributing  []string
	Severities    []string
	// DateFrom and DateTo are inclusive YYYY-MM-DD bounds; any bound
	// excludes undated incidents.
	DateFrom *string
	DateTo   *string
	// UpdatedSince is an RFC 3339 time; incidents updated at or after it match.
	UpdatedSince *string
	// Reviewed: review.reviewed_at is set (true) or not (false).
	Reviewed *bool
	// IsRecurrence: the incident has a recurrence_of link.
	IsRecurrence *bool
	// HasRecurrences: some incident is a recurrence of this one.
	HasRecurrences *bool
}

// TermLists returns the filter's slug lists by kind.
func (f *IncidentFilter) TermLists() map[TermKind][]string {
	return map[TermKind][]string{
		KindDomain: f.Domains, KindSymptom: f.Symptoms, KindComponent: f.Components,
		KindRootCause: f.RootCauses, KindContributing: f.Contributing, KindSeverity: f.Severities,
	}
}

// OrderField is what incidents are ordered by.
type OrderField string

// Order fields.
const (
	OrderDate      OrderField = "DATE"
	OrderUpdatedAt OrderField = "UPDATED_AT"
	OrderID        OrderField = "ID"
)

// Direction is an order's direction.
type Direction string

// Directions.
const (
	Asc  Direction = "ASC"
	Desc Direction = "DESC"
)

// IncidentOrder orders incidents. Ties are broken by id ascending, and
// incidents without a value (undated) come last in either direction.
type IncidentOrder struct {
	Field     OrderField
	Direction Direction
}

// DefaultOrder is DATE DESC.
var DefaultOrder = IncidentOrder{Field: OrderDate, Direction: Desc}

// Page sizes.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// PageArgs are Relay connection arguments.
type PageArgs struct {
	First  *int
	After  *string
	Last   *int
	Before *string
}

// IncidentPage is one page of a connection over incidents.
type IncidentPage struct {
	IDs             []string // in order
	Cursors         []string // one per id
	HasNextPage     bool
	HasPreviousPage bool
	TotalCount      int
}

// TermCount is how many incidents of a set carry a term.
type TermCount struct {
	Term  *Term
	Count int
}

// Facet is the term counts of one kind.
type Facet struct {
	Kind   TermKind
	Counts []TermCount
}

// YearCount is how many incidents of a set happened in a year.
type YearCount struct {
	Year  int
	Count int
}

// CountKey names a set whose incidents can be counted: a taxonomy term
// (Kind is a TermKind) or an organization (Kind is "organization").
type CountKey struct {
	Kind string
	Slug string
}

// CountKindOrganization is the CountKey kind of organizations.
const CountKindOrganization = "organization"

// IncidentService reads incidents.
type IncidentService interface {
	// FindIncidentsByIDs returns the incidents with the given ids in the
	// order of ids, with nil where an id is not in the store (or is
	// malformed). It reads in one transaction.
	FindIncidentsByIDs(ctx context.Context, ids []string) ([]*Incident, error)

	// FindIncidents returns one page of the incidents that match filter in
	// order. Returns EINVALID for a bad filter or page size, EBADCURSOR for a
	// malformed cursor.
	FindIncidents(ctx context.Context, filter IncidentFilter, order IncidentOrder, page PageArgs) (*IncidentPage, error)

	// CountIncidents returns how many incidents match filter.
	CountIncidents(ctx context.Context, filter IncidentFilter) (int, error)

	// Facets returns, for the incidents that match filter, the count of
	// each term of the given kinds (all kinds when kinds is empty). Terms
	// that no matching incident carries are left out.
	Facets(ctx context.Context, filter IncidentFilter, kinds []TermKind) ([]Facet, error)

	// Years returns, for the incidents that match filter, the count per
	// year, oldest first. Undated incidents are not counted.
	Years(ctx context.Context, filter IncidentFilter) ([]YearCount, error)

	// RecurrenceIDs returns, for each id, the ids of the incidents that are
	// recurrences of it (the reverse of recurrence_of), sorted by id.
	RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error)

	// CountIncidentsBy returns the number of incidents in each set, in the
	// order of keys; unknown sets count 0.
	CountIncidentsBy(ctx context.Context, keys []CountKey) ([]int, error)

	// Similar returns up to n incidents that share the most weighted terms
	// with the incident id, never the incident itself. Returns ENOTFOUND if
	// the incident does not exist.
	Similar(ctx context.Context, id string, n int) ([]SimilarIncident, error)
}

// SimilarIncident is an incident ranked by the terms it shares with another.
type SimilarIncident struct {
	ID               string
	Score            float64
	SharedTerms      []TermKey
	SameOrganization bool
}

// OrganizationService reads organizations.
type OrganizationService interface {
	// FindOrganizationsBySlugs returns organizations in the order of slugs,
	// nil where a slug is unknown.
	FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*Organization, error)

	// FindOrganizations returns one page of organizations ordered by slug.
	// Returns EINVALID for a bad page size, EBADCURSOR for a malformed cursor.
	FindOrganizations(ctx context.Context, page PageArgs) (*OrganizationPage, error)
}

// OrganizationPage is one page of organizations.
type OrganizationPage struct {
	Organizations   []*Organization
	Cursors         []string
	HasNextPage     bool
	HasPreviousPage bool
	TotalCount      int
}

// TaxonomyService reads the taxonomy.
type TaxonomyService interface {
	// Taxonomy returns the taxonomy of the store.
	Taxonomy() *Taxonomy
}

// ImportOptions control an import.
type ImportOptions struct {
	// KeepUpdatedAt keeps updated_at as given (imports and replication);
	// otherwise it is stamped with the commit time.
	KeepUpdatedAt bool
	// OnlyIfNew writes only into a store that never held incidents (the
	// seeds on first start); otherwise the import does nothing.
	OnlyIfNew bool
}

// ImportResult says what an import did.
type ImportResult struct {
	Created   int
	Updated   int
	Unchanged int
}

// IncidentWriter writes incidents.
type IncidentWriter interface {
	// ImportIncidents validates every record and writes all of them in one
	// transaction, or none. Returns EINVALID (with a list of errors naming
	// each bad record) and writes nothing if any record is bad.
	ImportIncidents(ctx context.Context, incs []*Incident, opts ImportOptions) (*ImportResult, error)
}
