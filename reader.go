package incidentlib

import "context"

// The read capabilities of the GraphQL side: what a request over the
// incident graph reads level by level, a consistent state of the store to
// read it from, and incidents of another library for links the store
// cannot resolve.

// Reader is what a request over the incident graph reads, level by level:
// incidents by id and by page with the page's facets and years, recurrence links, reverse related links, counts and organizations
// by slug. The methods are those of IncidentService and
// OrganizationService, with their contracts.
type Reader interface {
	FindIncidentsByIDs(ctx context.Context, ids []string) ([]*Incident, error)
	FindIncidents(ctx context.Context, filter IncidentFilter, order IncidentOrder, page PageArgs) (*IncidentPage, error)
	Facets(ctx context.Context, filter IncidentFilter, kinds []TermKind) ([]Facet, error)
	Years(ctx context.Context, filter IncidentFilter) ([]YearCount, error)
	RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error)
	RelatedByIDs(ctx context.Context, ids []string) ([][]string, error)
	CountIncidentsBy(ctx context.Context, keys []CountKey) ([]int, error)
	FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*Organization, error)
}

// Snapshot is a Reader bound to one state of the store, the one its first
// read finds: every read until Release sees that state, whatever is
// written meanwhile, and the reads together take one read transaction.
//
// A Snapshot is for one goroutine at a time. It reads with the context
// given to ReadSnapshot (the ctx of each call is not used), and it must not
// be read after Release. While a Snapshot has read and is not released,
// the goroutine holding it must not read the store in any other way (a
// writer growing the file would wait for the snapshot while the other read
// waits for the writer): release it first. Release must be called, and
// soon: an open snapshot keeps the pages it sees from being reused.
// Reading after Release returns an internal error.
type Snapshot interface {
	Reader
	// Release ends the snapshot. It may be called more than once.
	Release()
}

// Snapshots gives consistent reads of a store.
type Snapshots interface {
	// ReadSnapshot returns a snapshot of the store that reads with ctx.
	// It takes no transaction until its first read.
	ReadSnapshot(ctx context.Context) Snapshot
}

// RemoteIncidentReader reads incidents from another library: links that
// the store cannot resolve (serve --upstream) are read from there.
type RemoteIncidentReader interface {
	// FetchIncidents returns the other library's incidents with the given
	// ids, in the order of ids, nil where it has none. Returns
	// EUPSTREAMUNAVAILABLE, and no incidents, when the other library could
	// not be read (it failed, was too slow, or is known to be failing).
	FetchIncidents(ctx context.Context, ids []string) ([]*Incident, error)
}

// IsPartialRead reports whether the incidents and error that
// FindIncidentsByIDs returned are a partial answer: the incidents that
// could be read, nil for the others, and an EUPSTREAMUNAVAILABLE error
// saying that some could not be read from another library. An
// IncidentService composed with a RemoteIncidentReader answers so; the
// caller shows what it has and reports the error beside it.
func IsPartialRead(incs []*Incident, err error) bool {
	return incs != nil && err != nil && ErrorCode(err) == EUPSTREAMUNAVAILABLE
}
