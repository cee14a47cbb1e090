package graph

import (
	"context"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// FastReads of Query.stats: the aggregates are counted by their resolvers
// (outside the snapshot: they read the store in transactions of their
// own), and written here, their terms and organizations each as one list.

func (x *fastExec) stats(filter *incidentlib.IncidentFilter, sel ast.SelectionSet) {
	p := x.plan(sel, "IncidentStats")
	sr := x.r.IncidentStats()
	vals := make([]any, len(p.fields))
	var st *model.IncidentStats
	var err error
	names := make([]string, len(p.fields))
	for i := range p.fields {
		names[i] = p.fields[i].Name
	}
	x.outsideSnapshot(func(ctx context.Context) {
		if st, err = x.r.stats(ctx, filter, statsReadSet(names)); err != nil {
			return
		}
		for i := range p.fields {
			f := &p.fields[i]
			switch f.Name {
			case "byYear":
				var a map[string]any
				if a, err = x.ec.field_IncidentStats_byYear_args(ctx, f.args); err == nil {
					vals[i], err = sr.ByYear(ctx, st, a["kind"].(model.TaxonomyKind))
				}
			case "pairs":
				var a map[string]any
				if a, err = x.ec.field_IncidentStats_pairs_args(ctx, f.args); err == nil {
					vals[i], err = sr.Pairs(ctx, st, a["rows"].(model.TaxonomyKind), a["columns"].(model.TaxonomyKind))
				}
			case "topOrganizations":
				var a map[string]any
				if a, err = x.ec.field_IncidentStats_topOrganizations_args(ctx, f.args); err == nil {
					first, _ := a["first"].(*int)
					vals[i], err = sr.TopOrganizations(ctx, st, first)
				}
			case "durations":
				vals[i], err = sr.Durations(ctx, st)
			}
			if err != nil {
				return
			}
		}
	})
	if err != nil {
		bail()
	}
	// The writers of the lists, made before anything is written: they
	// read the counts their selections ask for.
	writers := make([]func(), len(p.fields))
	for i := range p.fields {
		f := &p.fields[i]
		switch v := vals[i].(type) {
		case []*model.YearTermCount:
			terms := make([]*model.TaxonomyTerm, len(v))
			for k, c := range v {
				terms[k] = c.Term
			}
			writers[i] = x.cells(len(v), f.Selections, "YearTermCount", map[string][]*model.TaxonomyTerm{"term": terms}, func(k int, name string) {
				if name == "year" {
					x.int(v[k].Year)
				} else {
					x.int(v[k].Count)
				}
			})
		case []*model.PairCount:
			rows, cols := make([]*model.TaxonomyTerm, len(v)), make([]*model.TaxonomyTerm, len(v))
			for k, c := range v {
				rows[k], cols[k] = c.Row, c.Column
			}
			writers[i] = x.cells(len(v), f.Selections, "PairCount", map[string][]*model.TaxonomyTerm{"row": rows, "column": cols}, func(k int, _ string) {
				x.int(v[k].Count)
			})
		case []*model.OrganizationCount:
			cp := x.plan(f.Selections, "OrganizationCount")
			orgs := make([]*organizations, len(cp.fields))
			objs := make([]*model.Organization, len(v))
			for k, c := range v {
				objs[k] = c.Organization
			}
			for j := range cp.fields {
				if cp.fields[j].Name == "organization" {
					orgs[j] = x.organizations(objs, cp.fields[j].Selections)
				}
			}
			writers[i] = func() {
				x.list(len(v), func(k int) {
					x.object(cp, "OrganizationCount", func(cf *pfield) {
						switch cf.Name {
						case "organization":
							orgs[cf.index].write(x, k)
						case "count":
							x.int(v[k].Count)
						default:
							bail()
						}
					})
				})
			}
		case *model.IncidentDurations:
			writers[i] = func() {
				x.object(x.plan(f.Selections, "IncidentDurations"), "IncidentDurations", func(df *pfield) {
					var d *model.DurationStats
					switch df.Name {
					case "detectedAfter":
						d = v.DetectedAfter
					case "resolvedAfter":
						d = v.ResolvedAfter
					default:
						bail()
					}
					x.durationStats(d, df.Selections)
				})
			}
		}
	}
	x.object(p, "IncidentStats", func(f *pfield) {
		switch {
		case f.Name == "count":
			x.int(st.Count)
		case writers[f.index] != nil:
			writers[f.index]()
		default:
			bail()
		}
	})
}

// cells returns the writer of a list of n cells of typ (YearTermCount,
// PairCount): its fields named in termFields are taxonomy terms, one per cell;
// the others are written by value.
func (x *fastExec) cells(n int, sel ast.SelectionSet, typ string, termFields map[string][]*model.TaxonomyTerm, value func(k int, name string)) func() {
	cp := x.plan(sel, typ)
	tw := make([]*terms, len(cp.fields))
	for j := range cp.fields {
		if objs, ok := termFields[cp.fields[j].Name]; ok {
			tw[j] = x.terms(objs, cp.fields[j].Selections)
		}
	}
	return func() {
		x.list(n, func(k int) {
			x.object(cp, typ, func(cf *pfield) {
				if tw[cf.index] != nil {
					tw[cf.index].write(x, k)
					return
				}
				switch cf.Name {
				case "year", "count":
					value(k, cf.Name)
				default:
					bail()
				}
			})
		})
	}
}

//nolint:dupl // DurationStats and PageInfo (pageInfo) are different types of four fields each: the same shape of switch over different fields; a table would cost a lookup per field on the hot path
func (x *fastExec) durationStats(d *model.DurationStats, sel ast.SelectionSet) {
	x.object(x.plan(sel, "DurationStats"), "DurationStats", func(f *pfield) {
		switch f.Name {
		case "count":
			x.int(d.Count)
		case "p50Seconds":
			x.optInt(d.P50Seconds)
		case "p90Seconds":
			x.optInt(d.P90Seconds)
		case "maxSeconds":
			x.optInt(d.MaxSeconds)
		default:
			bail()
		}
	})
}
