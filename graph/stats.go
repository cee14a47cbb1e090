package graph

import (
	"context"
	"slices"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// The costs of the aggregates: each counts from the indexes in proportion
// to the terms and years it crosses, not to the incidents.
const (
	// StatsBase is what Query.stats costs on top of its fields: the set
	// of its filter, read once.
	StatsBase = 10
	// ByYearSize is the assumed number of cells of byYear: years with
	// incidents times the terms of a kind that have some, most empty.
	ByYearSize = YearsSize * 10
	// PairsSize is the assumed number of cells of pairs.
	PairsSize = TaxonomySize * 10
	// DurationsBase is what reading the index of durations costs.
	DurationsBase = 10
)

// statsComplexity sets the costs of the aggregates' fields.
func statsComplexity(c *ComplexityRoot) {
	c.Query.Stats = func(child int, f *incidentlib.IncidentFilter) int {
		return costAdd(costAdd(StatsBase, child), filterCost(f))
	}
	c.IncidentStats.ByYear = func(child int, _ model.TaxonomyKind) int { return costList(ByYearSize, child) }
	c.IncidentStats.Pairs = func(child int, _, _ model.TaxonomyKind) int { return costList(PairsSize, child) }
	c.IncidentStats.TopOrganizations = func(child int, first *int) int {
		n := incidentlib.DefaultTopOrganizations
		if first != nil {
			n = min(max(1, *first), incidentlib.MaxTopOrganizations)
		}
		return costList(n, child)
	}
	c.IncidentStats.Durations = func(child int) int { return costAdd(DurationsBase, child) }
}

// statsCountFields are the fields of IncidentStats that read no more than
// the size of the set: every other field reads the set itself.
var statsCountFields = []string{"count", "__typename"}

// statsReadSet says whether a selection of IncidentStats, by its fields'
// names, reads the set itself, not only its size: the one rule both
// executors ask (Query.stats, FastReads' stats).
func statsReadSet(names []string) bool {
	for _, n := range names {
		if !slices.Contains(statsCountFields, n) {
			return true
		}
	}
	return false
}

// stats is Query.stats: the set of filter, read once, or, when the
// selection reads only its size (readSet false), that size alone,
// counted from the postings without building the set (storage's lazy
// sets).
func (r *Resolver) stats(ctx context.Context, filter *incidentlib.IncidentFilter, readSet bool) (*model.IncidentStats, error) {
	if r.Aggregates == nil {
		return nil, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "this server counts no aggregates")
	}
	var f incidentlib.IncidentFilter
	if filter != nil {
		f = *filter
	}
	if !readSet {
		n, err := r.Incidents.CountIncidents(ctx, f)
		if err != nil {
			return nil, err
		}
		return &model.IncidentStats{Count: n}, nil
	}
	set, err := r.Aggregates.MatchSet(ctx, f)
	if err != nil {
		return nil, err
	}
	return &model.IncidentStats{Set: set, Count: int(set.GetCardinality())}, nil
}

// findOrganizations is Query.organizations: by slug from the store's
// organizations, or, with nameStartsWith or orderBy, through Aggregates.
func (r *Resolver) findOrganizations(ctx context.Context, page incidentlib.PageArgs, nameStartsWith *string, orderBy *model.OrganizationOrder) (*incidentlib.OrganizationPage, error) {
	if nameStartsWith == nil && orderBy == nil {
		return r.Organizations.FindOrganizations(ctx, page)
	}
	if r.Aggregates == nil {
		return nil, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "this server cannot order or filter organizations")
	}
	var q incidentlib.OrganizationQuery
	if nameStartsWith != nil {
		q.NameStartsWith = *nameStartsWith
	}
	if orderBy != nil {
		q.Field = orderBy.Field
		if orderBy.Direction != nil {
			q.Direction = *orderBy.Direction
		}
	}
	return r.Aggregates.FindOrganizationsBy(ctx, q, page)
}
