package graph

import (
	"context"

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
