package graph

import (
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/graph/model"
)

// FastReads of IncidentConnection.facets and years: read through the
// request's snapshot (Loaders.reader), in the transaction of the page and
// its totalCount, where the store keeps the filter's evaluation
// (storage/matchmemo.go): one evaluation per request for the page, its
// count, facets and years. gqlgen's resolvers (schema.resolvers.go) give
// the same answers, each in a transaction of its own.

// connectionCounts writes the facets or years field f of connection c;
// false for another field.
func (x *fastExec) connectionCounts(c *model.IncidentConnection, f *pfield) bool {
	switch f.Name {
	case "facets":
		args := must(x.ec.field_IncidentConnection_facets_args(x.ctx, f.args))
		kinds, _ := args["kinds"].([]model.TaxonomyKind)
		x.facetList(facetsOf(x.ls.view, must(x.ls.reader.Facets(x.ctx, c.Filter, termKinds(kinds)))), f.Selections)
	case "years":
		years := must(x.ls.reader.Years(x.ctx, c.Filter))
		p := x.plan(f.Selections, "YearCount")
		x.list(len(years), func(k int) {
			x.object(p, "YearCount", func(yf *pfield) {
				switch yf.Name {
				case "year":
					x.int(years[k].Year)
				case "count":
					x.int(years[k].Count)
				default:
					bail()
				}
			})
		})
	default:
		return false
	}
	return true
}

// facetList writes facets, the terms of all their counts read as one
// list per term selection.
func (x *fastExec) facetList(facets []*model.Facet, sel ast.SelectionSet) {
	p := x.plan(sel, "Facet")
	var objs []*model.TaxonomyTerm
	at := make([]int, len(facets)+1) // facet k's counts are objs[at[k]:at[k+1]]
	for k, fc := range facets {
		for _, c := range fc.Counts {
			objs = append(objs, c.Term)
		}
		at[k+1] = len(objs)
	}
	writers := make([]func(k int), len(p.fields))
	for i := range p.fields {
		if p.fields[i].Name != "counts" {
			continue
		}
		cp := x.plan(p.fields[i].Selections, "TermCount")
		tw := make([]*terms, len(cp.fields))
		for j := range cp.fields {
			if cp.fields[j].Name == "term" {
				tw[j] = x.terms(objs, cp.fields[j].Selections)
			}
		}
		writers[i] = func(k int) {
			counts := facets[k].Counts
			x.list(len(counts), func(j int) {
				x.object(cp, "TermCount", func(cf *pfield) {
					switch cf.Name {
					case "term":
						tw[cf.index].write(x, at[k]+j)
					case "count":
						x.int(counts[j].Count)
					default:
						bail()
					}
				})
			})
		}
	}
	x.list(len(facets), func(k int) {
		x.object(p, "Facet", func(f *pfield) {
			switch {
			case f.Name == "kind":
				x.str(string(facets[k].Kind))
			case writers[f.index] != nil:
				writers[f.index](k)
			default:
				bail()
			}
		})
	})
}
