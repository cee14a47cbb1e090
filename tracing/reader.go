package tracing

import (
	"context"

	"github.com/incidentlib/incidentlib"
)

// Reader stands in for an incidentlib.Reader (the store reads of a GraphQL
// request, loader batches' and FastReads' alike) with a span per read,
// named "store.<Method>". Off, Reader returns r itself.
func Reader(r incidentlib.Reader) incidentlib.Reader {
	if r == nil || !Enabled() {
		return r
	}
	return &tracedReader{r: r}
}

// Snapshot is Reader for a Snapshot.
func Snapshot(s incidentlib.Snapshot) incidentlib.Snapshot {
	if s == nil || !Enabled() {
		return s
	}
	return &tracedReader{r: s, s: s}
}

// tracedReader forwards every method of incidentlib.Reader to r, by name,
// and Release to s when it stands in for a Snapshot.
type tracedReader struct {
	r incidentlib.Reader
	s incidentlib.Snapshot // nil unless made by Snapshot
}

var _ incidentlib.Reader = &tracedReader{}

func (t *tracedReader) FindIncidentsByIDs(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
	ctx, span := Start(ctx, "store.FindIncidentsByIDs")
	defer span.End()
	return t.r.FindIncidentsByIDs(ctx, ids)
}

func (t *tracedReader) FindIncidents(ctx context.Context, filter incidentlib.IncidentFilter, order incidentlib.IncidentOrder, page incidentlib.PageArgs) (*incidentlib.IncidentPage, error) {
	ctx, span := Start(ctx, "store.FindIncidents")
	defer span.End()
	return t.r.FindIncidents(ctx, filter, order, page)
}

func (t *tracedReader) RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error) {
	ctx, span := Start(ctx, "store.RecurrenceIDs")
	defer span.End()
	return t.r.RecurrenceIDs(ctx, ids)
}

func (t *tracedReader) RelatedByIDs(ctx context.Context, ids []string) ([][]string, error) {
	ctx, span := Start(ctx, "store.RelatedByIDs")
	defer span.End()
	return t.r.RelatedByIDs(ctx, ids)
}

func (t *tracedReader) CountIncidentsBy(ctx context.Context, keys []incidentlib.CountKey) ([]int, error) {
	ctx, span := Start(ctx, "store.CountIncidentsBy")
	defer span.End()
	return t.r.CountIncidentsBy(ctx, keys)
}

func (t *tracedReader) FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*incidentlib.Organization, error) {
	ctx, span := Start(ctx, "store.FindOrganizationsBySlugs")
	defer span.End()
	return t.r.FindOrganizationsBySlugs(ctx, slugs)
}

var _ incidentlib.Snapshot = &tracedReader{}

// Release implements incidentlib.Snapshot for a traced snapshot.
func (t *tracedReader) Release() {
	if t.s != nil {
		t.s.Release()
	}
}
