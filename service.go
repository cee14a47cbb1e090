package incidentlib

import (
	"context"
)

// Organization is an organization incidents happened to or otherwise name.
// Organizations are derived from the incidents: their org and org_slug
// fields (the affected organization) and their organization_roles (vendors,
// reporters). An organization is in the library while some incident names
// it in any role; its incident count and the organizations filter count
// only the incidents it is the affected organization of.
type Organization struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// ID is the organization's global id, "org:SLUG".
func (o *Organization) ID() string { return "org:" + o.Slug }

// IncidentFilter selects incidents. Nil or empty fields do not constrain.
// Within one slug list the values are ORed; across fields they are ANDed.
// A slug that matches nothing gives an empty result, not an error. Not and
// Or make it a set filter, bounded and evaluated by package filterexpr
// (docs/graph.md, "Set filters").
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
	// Reviewed: true is ReviewStates [REVIEWED], false every other state.
	Reviewed *bool
	// ReviewStates: the incident's review state is one of these. Withdrawn
	// incidents match only a filter that names WITHDRAWN (or gives IDs).
	ReviewStates []ReviewState
	// IsRecurrence: the incident has a recurrence_of link.
	IsRecurrence *bool
	// HasRecurrences: some incident is a recurrence of this one, counting
	// the listed ones only (visibility.go), as RecurrenceIDs does.
	HasRecurrences *bool
	// Verification: the incident's verification is one of these (a record
	// without one is UNKNOWN).
	Verification []Verification
	// Not: the incident does not match this filter.
	Not *IncidentFilter
	// Or: the incident matches one of these (empty: no constraint).
	Or []IncidentFilter
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

// IsValid reports whether f is one of the order fields.
func (f OrderField) IsValid() bool { return f == OrderDate || f == OrderUpdatedAt || f == OrderID }

// Direction is an order's direction.
type Direction string

// Directions.
const (
	Asc  Direction = "ASC"
	Desc Direction = "DESC"
)

// IsValid reports whether d is ASC or DESC.
func (d Direction) IsValid() bool { return d == Asc || d == Desc }

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
	// recurrences of it (the reverse of recurrence_of), sorted by id,
	// counting only the incidents lists show by default (visibility.go).
	RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error)

	// RelatedByIDs returns, for each id, the ids of the incidents whose
	// related names it (the reverse of related), sorted by id, counting
	// only the incidents lists show by default (visibility.go).
	RelatedByIDs(ctx context.Context, ids []string) ([][]string, error)

	// CountIncidentsBy returns the number of incidents in each set, in the
	// order of keys; unknown sets count 0.
	CountIncidentsBy(ctx context.Context, keys []CountKey) ([]int, error)

	// Similar returns up to n incidents that share the most weighted terms
	// with the incident id, never the incident itself, among the incidents
	// lists show by default (visibility.go). Returns ENOTFOUND if the
	// incident does not exist.
	Similar(ctx context.Context, id string, n int) ([]SimilarIncident, error)
}

// SimilarIncident is an incident ranked by the terms it shares with another.
type SimilarIncident struct {
	ID               string
	Score            float64
	SharedTerms      []TermKey
	SameOrganization bool
	// SharedWords are the glossary entries (their English form) both
	// texts hold, in either language (SearchService.SimilarByWords).
	SharedWords []string
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
	// Merges maps incident ids merged away to the incident that absorbed
	// them (the same postmortem reached through two collections): in the
	// import's transaction the merged-away incident is removed, links to it
	// are re-pointed, and its id keeps resolving to the absorbing one.
	Merges map[string]string
	// Progress, if set, is told how many records were written so far.
	Progress func(done, total int)
	// Draft is an editor's import (importIncidents without an admin
	// token): the review belongs to the store, as for an upsert. A record
	// that differs from the stored one only in its review is unchanged;
	// a new or changed record is written DRAFT, without reviewed_at and
	// reviewed_by, and an existing one keeps its first author.
	Draft bool
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

	// UpsertIncident validates inc and stores it in place of any earlier
	// version, with every index and reverse link, in one transaction that
	// may be shared with concurrent writes. updated_at is stamped with the
	// commit time. The review state belongs to the store: inc may not set
	// review.reviewed_at or review.reviewed_by (ReviewIncident does), and a
	// change to a reviewed incident makes it unreviewed again. An upsert
	// that changes nothing writes nothing. Returns the record as stored.
	// Returns EINVALID (an Errors list naming each bad field) for a bad
	// record, a link to an incident not in the library or a recurrence
	// cycle; ECONFLICT if opts.ExpectedUpdatedAt does not match; ETIMEOUT
	// if ctx ended before the write started. Nothing is written on error.
	UpsertIncident(ctx context.Context, inc *Incident, opts WriteOptions) (*Incident, error)

	// DeleteIncident removes the incident id from the store and every
	// index, and removes the links to it from the incidents whose related
	// or recurrence_of named it (those are stamped and logged as changed),
	// in one transaction. Returns EINVALID for a malformed id, ENOTFOUND if
	// the incident does not exist, ECONFLICT if opts.ExpectedUpdatedAt
	// does not match.
	DeleteIncident(ctx context.Context, id string, opts WriteOptions) (*DeleteResult, error)

	// The history's own writes: restore, the review workflow, purge.
	HistoryWriter
}

// WriteOptions control one mutation of an incident.
type WriteOptions struct {
	// ExpectedUpdatedAt, when set, is the updated_at the caller last read:
	// the write happens only while the stored record still has it
	// (optimistic concurrency). An empty string means the incident must
	// not exist yet.
	ExpectedUpdatedAt *string
	// ExpectedVersion, when set, is the version the caller last read: the
	// write happens only while the incident is still at it (ECONFLICT
	// otherwise). 0 means the incident must not exist yet.
	ExpectedVersion *int
}

// DeleteResult says what a delete did.
type DeleteResult struct {
	ID string
	// Unlinked lists, sorted, the incidents whose related or recurrence_of
	// named the deleted incident and lost that link.
	Unlinked []string
}

// SearchQuery is a full-text search: a query in the search syntax, the
// filter it combines with, and the language searched.
type SearchQuery struct {
	// Query holds words, "quoted phrases", -exclusions and the field
	// prefixes title:, lessons: and org:. Every word and phrase must match.
	Query string
	// Filter selects incidents exactly as it does for FindIncidents.
	Filter IncidentFilter
	// Lang limits the search and the highlights to one language's text;
	// nil searches both.
	Lang *Lang
}

// SearchHit is one incident found by a search.
type SearchHit struct {
	ID     string
	Score  float64
	Cursor string
	// Highlights show where the incident matched, one per field and
	// language, in the order title, summary, lessons, trigger, detection,
	// symptomsText, org.
	Highlights []Highlight
}

// Highlight is a piece of a field around its matches.
type Highlight struct {
	// Field is title, summary, lessons, trigger, detection, symptomsText
	// or org.
	Field string
	// Lang is the language of the text; empty for org.
	Lang Lang
	// Snippet is HTML: the text escaped, each match in <mark></mark>, and
	// "…" where the text was cut.
	Snippet string
	// Translated: the marks are of the query's translation through the
	// glossary (the query's own words match nowhere in this text).
	Translated bool
}

// SearchPage is one page of search results, best first.
type SearchPage struct {
	Hits            []SearchHit
	HasNextPage     bool
	HasPreviousPage bool
	TotalCount      int
	// Suggestions are corrected queries when no incident matches (a
	// word one letter off one the index holds), at most 5; empty
	// otherwise.
	Suggestions []string
}

// SearchService searches the text of incidents. Searches see every write
// acknowledged before they started; deleted incidents never appear.
type SearchService interface {
	// Search returns one page of the incidents that match q, best first.
	// Pages go forward only (first, after); cursors are offsets into the
	// ranking, so a page after a write may repeat or skip an incident.
	// Returns EBADQUERY for a malformed query, EINVALID for a bad filter or
	// page size, EBADCURSOR for a malformed cursor or one made for another
	// search, ETIMEOUT if ctx ends first.
	Search(ctx context.Context, q SearchQuery, page PageArgs) (*SearchPage, error)

	// SearchFacets returns, for every incident that matches q, the count
	// of each term of the given kinds (all kinds when kinds is empty), as
	// Facets does for a filter. Returns the errors of Search.
	SearchFacets(ctx context.Context, q SearchQuery, kinds []TermKind) ([]Facet, error)

	// SearchYears returns, for every incident that matches q, the count
	// per year, oldest first, as Years does for a filter. Returns the
	// errors of Search.
	SearchYears(ctx context.Context, q SearchQuery) ([]YearCount, error)

	// SimilarByWords ranks up to n listed incidents by the glossary's
	// words they share with incident id, in either language. Returns
	// EINVALID for n out of 0..MaxPageSize, ENOTFOUND for an unknown id.
	SimilarByWords(ctx context.Context, id string, n int) ([]SimilarIncident, error)
}
