package graph

import (
	"context"
	"strings"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// orderOf converts the GraphQL order input.
func orderOf(o *model.IncidentOrder) incidentlib.IncidentOrder {
	if o == nil {
		return incidentlib.DefaultOrder
	}
	return incidentlib.IncidentOrder{Field: o.Field, Direction: o.Direction}
}

// connection reads one page of incidents and everything the selection asks
// below them.
func (r *Resolver) connection(ctx context.Context, filter *incidentlib.IncidentFilter, orderBy *model.IncidentOrder, page incidentlib.PageArgs) (*model.IncidentConnection, error) {
	var f incidentlib.IncidentFilter
	if filter != nil {
		f = *filter
	}
	p, err := r.reader(ctx).FindIncidents(ctx, f, orderOf(orderBy), page)
	if err != nil {
		return nil, err
	}
	incs, err := r.loaders(ctx).Incidents.LoadAll(ctx, p.IDs)
	if err != nil {
		return nil, err
	}
	conn := &model.IncidentConnection{
		Edges:      make([]*model.IncidentEdge, 0, len(incs)),
		PageInfo:   &model.PageInfo{HasNextPage: p.HasNextPage, HasPreviousPage: p.HasPreviousPage},
		TotalCount: p.TotalCount,
		Filter:     f,
	}
	// The nodes and edges in one slab each, whatever their number.
	conn.Nodes = r.view(ctx).NewIncidents(incs) // those not deleted between the two reads
	present := make([]*incidentlib.Incident, 0, len(conn.Nodes))
	edges := make([]model.IncidentEdge, 0, len(conn.Nodes))
	for i, inc := range incs {
		if inc == nil {
			continue
		}
		present = append(present, inc)
		edges = append(edges, model.IncidentEdge{Cursor: p.Cursors[i], Node: conn.Nodes[len(edges)]})
		conn.Edges = append(conn.Edges, &edges[len(edges)-1])
	}
	edgeCursor := func(i int) *string { return &conn.Edges[i].Cursor }
	if err := r.endPage(ctx, conn.PageInfo, len(conn.Edges), edgeCursor, present); err != nil {
		return nil, err
	}
	return conn, nil
}

// endPage ends a page of n edges: its start and end cursors are the first
// and last edge's (cursor(i) is edge i's), and what the selection asks
// below its present incidents is read ahead, one batch per loader per
// level (prefetchConnection).
func (r *Resolver) endPage(ctx context.Context, pi *model.PageInfo, n int, cursor func(i int) *string, present []*incidentlib.Incident) error {
	endCursors(pi, n, cursor)
	return r.prefetchConnection(ctx, present)
}

// endCursors sets the start and end cursors of a page of n edges to the
// first and last edge's (cursor(i) is edge i's); an empty page has none.
func endCursors(pi *model.PageInfo, n int, cursor func(i int) *string) {
	if n > 0 {
		pi.StartCursor, pi.EndCursor = cursor(0), cursor(n-1)
	}
}

// withTerm returns filter narrowed to one term or organization.
func withTerm(filter *incidentlib.IncidentFilter, kind string, slug string) *incidentlib.IncidentFilter {
	var f incidentlib.IncidentFilter
	if filter != nil {
		f = *filter
	}
	and := func(list []string) []string {
		if len(list) == 0 {
			return []string{slug}
		}
		for _, s := range list {
			if s == slug {
				return []string{slug}
			}
		}
		return []string{"\x00none"} // the intersection is empty
	}
	switch kind {
	case incidentlib.CountKindOrganization:
		f.Organizations = and(f.Organizations)
	case string(incidentlib.KindDomain):
		f.Domains = and(f.Domains)
	case string(incidentlib.KindSymptom):
		f.Symptoms = and(f.Symptoms)
	case string(incidentlib.KindComponent):
		f.Components = and(f.Components)
	case string(incidentlib.KindRootCause):
		f.RootCauses = and(f.RootCauses)
	case string(incidentlib.KindContributing):
		f.Contributing = and(f.Contributing)
	case string(incidentlib.KindSeverity):
		f.Severities = and(f.Severities)
	}
	return &f
}

// node resolves a global id.
func (r *Resolver) nodes(ctx context.Context, ids []string) ([]model.Node, error) {
	out := make([]model.Node, len(ids))
	var incIDs []string
	var orgSlugs []string
	for _, id := range ids {
		switch {
		case strings.HasPrefix(id, "IL-"):
			incIDs = append(incIDs, id)
		case strings.HasPrefix(id, "org:"):
			orgSlugs = append(orgSlugs, strings.TrimPrefix(id, "org:"))
		}
	}
	ls := r.loaders(ctx)
	incs, err := ls.Incidents.LoadAll(ctx, incIDs)
	if err != nil {
		return nil, err
	}
	orgs, err := ls.Organizations.LoadAll(ctx, orgSlugs)
	if err != nil {
		return nil, err
	}
	v := r.view(ctx)
	var present []*incidentlib.Incident
	ii, oi := 0, 0
	for i, id := range ids {
		switch {
		case strings.HasPrefix(id, "IL-"):
			if inc := incs[ii]; inc != nil {
				out[i] = v.NewIncident(inc)
				present = append(present, inc)
			}
			ii++
		case strings.HasPrefix(id, "org:"):
			if o := orgs[oi]; o != nil {
				out[i] = &model.Organization{Organization: o}
			}
			oi++
		case strings.HasPrefix(id, "term:"):
			parts := strings.SplitN(id, ":", 3)
			if len(parts) == 3 {
				if t := v.Tax.Term(incidentlib.TermKind(parts[1]), parts[2]); t != nil {
					out[i] = v.NewTerm(t)
				}
			}
		}
	}
	if err := r.prefetchSelected(ctx, present); err != nil {
		return nil, err
	}
	return out, nil
}

// wrapGroups wraps incs cut into consecutive groups of the given sizes,
// leaving out the nils (links to incidents not in the library), with four
// allocations whatever the number of groups.
func wrapGroups(v *model.View, incs []*incidentlib.Incident, sizes []int) [][]*model.Incident {
	out := make([][]*model.Incident, len(sizes))
	slab := make([]model.Incident, 0, len(incs))
	ptrs := make([]*model.Incident, 0, len(incs))
	k := 0
	for i, n := range sizes {
		start := len(ptrs)
		for _, inc := range incs[k : k+n] {
			if inc != nil {
				slab = append(slab, model.Incident{Inc: inc, View: v})
				ptrs = append(ptrs, &slab[len(slab)-1])
			}
		}
		out[i] = ptrs[start:len(ptrs):len(ptrs)]
		k += n
	}
	return out
}

// termKinds converts the GraphQL kinds of a facets field.
func termKinds(kinds []model.TaxonomyKind) []incidentlib.TermKind {
	ks := make([]incidentlib.TermKind, len(kinds))
	for i, k := range kinds {
		ks[i] = model.TermKindOf(k)
	}
	return ks
}

// facetsOf converts the facets of the store or of the search index, with
// the terms of the request's view v.
func facetsOf(v *model.View, facets []incidentlib.Facet) []*model.Facet {
	out := make([]*model.Facet, len(facets))
	for i, f := range facets {
		counts := make([]*model.TermCount, len(f.Counts))
		for j, c := range f.Counts {
			counts[j] = &model.TermCount{Term: v.NewTerm(c.Term), Count: c.Count}
		}
		out[i] = &model.Facet{Kind: model.KindOf(f.Kind), Counts: counts}
	}
	return out
}

// yearCounts converts year counts, one pointer into years each.
func yearCounts(years []incidentlib.YearCount) []*incidentlib.YearCount {
	out := make([]*incidentlib.YearCount, len(years))
	for i := range years {
		out[i] = &years[i]
	}
	return out
}
