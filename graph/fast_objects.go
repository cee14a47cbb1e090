package graph

import (
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/graph/model"
)

// organizations is a list of organizations with their counts if asked.
type organizations struct {
	objs   []*model.Organization
	plan   *plan
	counts []int
}

func (x *fastExec) organizations(objs []*model.Organization, sel ast.SelectionSet) *organizations {
	p := x.plan(sel, "Organization")
	b := &organizations{objs: objs, plan: p}
	for i := range p.fields {
		if p.fields[i].Name == "incidentCount" && b.counts == nil {
			counts, err := x.r.Organization().IncidentCount(x.ctx, objs)
			if err != nil || len(counts) != len(objs) {
				bail()
			}
			b.counts = counts
		}
	}
	return b
}

func (b *organizations) write(x *fastExec, k int) {
	o := b.objs[k]
	if o == nil || o.Organization == nil {
		bail()
	}
	x.object(b.plan, "Organization", func(f *pfield) {
		switch f.Name {
		case "id":
			x.str(o.ID())
		case "slug":
			x.str(o.Slug)
		case "name":
			x.str(o.Name)
		case "incidentCount":
			x.int(b.counts[k])
		default: // a field not written here is in FastReadsHandsOn
			bail()
		}
	})
}

// terms is a list of taxonomy terms with their counts if asked.
type terms struct {
	objs   []*model.TaxonomyTerm
	plan   *plan
	counts []int
}

func (x *fastExec) terms(objs []*model.TaxonomyTerm, sel ast.SelectionSet) *terms {
	p := x.plan(sel, "TaxonomyTerm")
	b := &terms{objs: objs, plan: p}
	for i := range p.fields {
		if p.fields[i].Name == "incidentCount" && b.counts == nil && len(objs) > 0 {
			counts, err := x.r.TaxonomyTerm().IncidentCount(x.ctx, objs)
			if err != nil || len(counts) != len(objs) {
				bail()
			}
			b.counts = counts
		}
	}
	return b
}

func (x *fastExec) termList(objs []*model.TaxonomyTerm, sel ast.SelectionSet) {
	x.terms(objs, sel).writeRange(x, 0, len(objs))
}

func (b *terms) writeRange(x *fastExec, from, to int) {
	x.list(to-from, func(k int) { b.write(x, from+k) })
}

func (b *terms) write(x *fastExec, k int) {
	t := b.objs[k]
	if t == nil {
		bail()
	}
	x.object(b.plan, "TaxonomyTerm", func(f *pfield) {
		switch f.Name {
		case "id":
			x.str(t.ID())
		case "kind":
			x.str(string(t.Kind()))
		case "slug":
			x.str(t.Slug())
		case "label":
			x.str(t.Label(f.lang))
		case "description":
			x.optStr(t.Description(f.lang))
		case "incidentCount":
			x.int(b.counts[k])
		default: // a field not written here is in FastReadsHandsOn
			bail()
		}
	})
}

//nolint:dupl // Impact and Review are different types with three optional strings each; a table would cost a lookup per field on the hot path
func (x *fastExec) impact(m *model.Impact, sel ast.SelectionSet) {
	x.object(x.plan(sel, "Impact"), "Impact", func(f *pfield) {
		switch f.Name {
		case "scope":
			x.optStr(m.Scope())
		case "users":
			x.optStr(m.Users())
		case "region":
			x.optStr(m.Region())
		default:
			bail()
		}
	})
}

func (x *fastExec) timeline(t *model.Timeline, sel ast.SelectionSet) {
	x.object(x.plan(sel, "Timeline"), "Timeline", func(f *pfield) {
		switch f.Name {
		case "detectedAfter":
			x.optStr(t.DetectedAfter())
		case "resolvedAfter":
			x.optStr(t.ResolvedAfter())
		case "detectedAfterSeconds":
			x.optInt(t.DetectedAfterSeconds())
		case "resolvedAfterSeconds":
			x.optInt(t.ResolvedAfterSeconds())
		default:
			bail()
		}
	})
}

func (x *fastExec) items(items []*model.Item, sel ast.SelectionSet) {
	p := x.plan(sel, "Item")
	x.list(len(items), func(k int) {
		x.object(p, "Item", func(f *pfield) {
			if f.Name != "text" {
				bail()
			}
			x.optStr(items[k].Text(f.lang))
		})
	})
}

func (x *fastExec) sources(srcs []*model.Source, sel ast.SelectionSet) {
	p := x.plan(sel, "Source")
	x.list(len(srcs), func(k int) {
		s := srcs[k]
		x.object(p, "Source", func(f *pfield) {
			switch f.Name {
			case "url":
				x.str(s.URL())
			case "kind":
				x.optStr(s.Kind())
			case "archived":
				x.optStr(s.Archived())
			case "status":
				x.optInt(s.Status())
			case "checkedAt":
				x.optStr(s.CheckedAt())
			case "finalUrl":
				x.optStr(s.FinalURL())
			default:
				bail()
			}
		})
	})
}

//nolint:dupl // see impact
func (x *fastExec) review(r *model.Review, sel ast.SelectionSet) {
	x.object(x.plan(sel, "Review"), "Review", func(f *pfield) {
		switch f.Name {
		case "writtenBy":
			x.optStr(r.WrittenBy())
		case "reviewedAt":
			x.optStr(r.ReviewedAt())
		case "reviewedBy":
			x.optStr(r.ReviewedBy())
		default:
			bail()
		}
	})
}

// object writes one object: each field of p by value, __typename as typ.
func (x *fastExec) object(p *plan, typ string, value func(f *pfield)) {
	x.byte('{')
	for i := range p.fields {
		f := &p.fields[i]
		x.key(i, f)
		if f.Name == "__typename" {
			x.str(typ)
		} else {
			value(f)
		}
	}
	x.byte('}')
}

// list writes a JSON array of n elements, each by elem.
func (x *fastExec) list(n int, elem func(k int)) {
	x.byte('[')
	for k := range n {
		if k > 0 {
			x.byte(',')
		}
		elem(k)
	}
	x.byte(']')
}
