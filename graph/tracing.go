package graph

import (
	"context"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/tracing"
)

// tracedReader stands in for an incidentlib.Reader (the store reads of a
// GraphQL request, loader batches' and FastReads' alike) with a span per
// read, named "store.<Method>" (docs/tracing.md). traceReads returns r
// itself when tracing is off.
type tracedReader struct {
	r incidentlib.Reader
	s incidentlib.Snapshot // nil unless made by traceSnapshot
}

var (
	_ incidentlib.Reader   = &tracedReader{}
	_ incidentlib.Snapshot = &tracedReader{}
)

func traceReads(r incidentlib.Reader) incidentlib.Reader {
	if r == nil || !tracing.Enabled() {
		return r
	}
	return &tracedReader{r: r}
}

func traceSnapshot(s incidentlib.Snapshot) incidentlib.Snapshot {
	if s == nil || !tracing.Enabled() {
		return s
	}
	return &tracedReader{r: s, s: s}
}

//nolint:dupl // named forwarding of each Reader method with its span, as a stand-in does (docs/design.md); a generic helper would hide which method a span names
func (t *tracedReader) FindIncidentsByIDs(ctx context.Context, ids []string) ([]*incidentlib.Incident, error) {
	ctx, span := tracing.Start(ctx, "store.FindIncidentsByIDs")
	defer span.End()
	return t.r.FindIncidentsByIDs(ctx, ids)
}

func (t *tracedReader) FindIncidents(ctx context.Context, filter incidentlib.IncidentFilter, order incidentlib.IncidentOrder, page incidentlib.PageArgs) (*incidentlib.IncidentPage, error) {
	ctx, span := tracing.Start(ctx, "store.FindIncidents")
	defer span.End()
	return t.r.FindIncidents(ctx, filter, order, page)
}

func (t *tracedReader) Facets(ctx context.Context, filter incidentlib.IncidentFilter, kinds []incidentlib.TermKind) ([]incidentlib.Facet, error) {
	ctx, span := tracing.Start(ctx, "store.Facets")
	defer span.End()
	return t.r.Facets(ctx, filter, kinds)
}

func (t *tracedReader) Years(ctx context.Context, filter incidentlib.IncidentFilter) ([]incidentlib.YearCount, error) {
	ctx, span := tracing.Start(ctx, "store.Years")
	defer span.End()
	return t.r.Years(ctx, filter)
}

func (t *tracedReader) RecurrenceIDs(ctx context.Context, ids []string) ([][]string, error) {
	ctx, span := tracing.Start(ctx, "store.RecurrenceIDs")
	defer span.End()
	return t.r.RecurrenceIDs(ctx, ids)
}

func (t *tracedReader) RelatedByIDs(ctx context.Context, ids []string) ([][]string, error) {
	ctx, span := tracing.Start(ctx, "store.RelatedByIDs")
	defer span.End()
	return t.r.RelatedByIDs(ctx, ids)
}

func (t *tracedReader) CountIncidentsBy(ctx context.Context, keys []incidentlib.CountKey) ([]int, error) {
	ctx, span := tracing.Start(ctx, "store.CountIncidentsBy")
	defer span.End()
	return t.r.CountIncidentsBy(ctx, keys)
}

//nolint:dupl // see FindIncidentsByIDs
func (t *tracedReader) FindOrganizationsBySlugs(ctx context.Context, slugs []string) ([]*incidentlib.Organization, error) {
	ctx, span := tracing.Start(ctx, "store.FindOrganizationsBySlugs")
	defer span.End()
	return t.r.FindOrganizationsBySlugs(ctx, slugs)
}

// Release implements incidentlib.Snapshot for a traced snapshot.
func (t *tracedReader) Release() {
	if t.s != nil {
		t.s.Release()
	}
}
