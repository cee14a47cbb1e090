package graph

import (
	"context"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// incidentList writes incs as a JSON array (list) or its only element.
func (x *fastExec) incidentList(incs []*model.Incident, sel ast.SelectionSet, list bool) {
	b := x.incidents(incs, sel)
	if !list {
		b.write(x, 0)
		return
	}
	b.writeRange(x, 0, len(incs))
}

// incidents is a list of incidents with, for each relation field of their
// selection, the related objects of all of them, read at once.
type incidents struct {
	objs []*model.Incident
	plan *plan
	rel  []any // per field of the plan: *incidentsByParent, *organizations, *termsByParent, *incidentOrgsByParent
}

// incidentsByParent are the incidents related to each of a list's
// incidents, as one list: parent k's are all.objs[offs[k]:offs[k+1]].
type incidentsByParent struct {
	all  *incidents
	offs []int
}

// termsByParent are the terms of one kind of each of a list's incidents.
type termsByParent struct {
	all  *terms
	offs []int
}

func (x *fastExec) incidents(objs []*model.Incident, sel ast.SelectionSet) *incidents {
	p := x.plan(sel, "Incident")
	b := &incidents{objs: objs, plan: p, rel: make([]any, len(p.fields))}
	if len(objs) == 0 {
		return b
	}
	if err := x.readLinks(objs, p); err != nil {
		bail()
	}
	ir := x.r.Incident()
	for i := range p.fields {
		f := &p.fields[i]
		switch f.Name {
		case "organization":
			orgs, err := ir.Organization(x.ctx, objs)
			b.rel[i] = x.organizations(batched(orgs, err, len(objs)), f.Selections)
		case "organizations":
			lists, err := ir.Organizations(x.ctx, objs)
			b.rel[i] = x.incidentOrgs(batched(lists, err, len(objs)), f.Selections)
		case "related", "recurrences", "relatedBy":
			var lists [][]*model.Incident
			var err error
			switch f.Name {
			case "related":
				lists, err = ir.Related(x.ctx, objs)
			case "recurrences":
				lists, err = ir.Recurrences(x.ctx, objs)
			default:
				lists, err = ir.RelatedBy(x.ctx, objs)
			}
			b.rel[i] = x.flatten(batched(lists, err, len(objs)), f.Selections)
		case "recurrenceOf":
			incs, err := ir.RecurrenceOf(x.ctx, objs)
			incs = batched(incs, err, len(objs))
			lists := make([][]*model.Incident, len(incs))
			for k, inc := range incs {
				if inc != nil {
					lists[k] = incs[k : k+1]
				}
			}
			b.rel[i] = x.flatten(lists, f.Selections)
		case "domains", "symptoms", "components", "contributing", "rootCause", "severity":
			offs := make([]int, 1, len(objs)+1)
			all := make([]*model.TaxonomyTerm, 0, termCount(objs, f.Name))
			for _, o := range objs {
				all = appendTerms(all, o, f.Name)
				offs = append(offs, len(all))
			}
			b.rel[i] = &termsByParent{all: x.terms(all, f.Selections), offs: offs}
		}
	}
	return b
}

// readLinks reads, in one batch, every incident that the relation fields of
// p link the objects to, for the batch resolvers to find in the loaders.
// (The resolvers called above run without a field context, so without
// their own prefetch: FastReads reads level by level here.)
func (x *fastExec) readLinks(objs []*model.Incident, p *plan) error {
	var want struct{ related, recurrenceOf, recurrences, relatedBy bool }
	for i := range p.fields {
		switch p.fields[i].Name {
		case "related":
			want.related = true
		case "recurrenceOf":
			want.recurrenceOf = true
		case "recurrences":
			want.recurrences = true
		case "relatedBy":
			want.relatedBy = true
		}
	}
	ls := x.r.loaders(x.ctx)
	n := 0
	for _, o := range objs {
		if want.related {
			n += len(o.Inc.Related)
		}
		if want.recurrenceOf && o.Inc.RecurrenceOf != "" {
			n++
		}
	}
	keys := make([]string, 0, n)
	if want.recurrences || want.relatedBy {
		ids := make([]string, len(objs))
		for k, o := range objs {
			ids[k] = o.Inc.ID
		}
		var err error
		if want.recurrences {
			if keys, err = appendLoaded(x.ctx, keys, ids, &ls.Recurrences); err != nil {
				return err
			}
		}
		if want.relatedBy {
			if keys, err = appendLoaded(x.ctx, keys, ids, &ls.RelatedBy); err != nil {
				return err
			}
		}
	}
	for _, o := range objs {
		if want.related {
			keys = append(keys, o.Inc.Related...)
		}
		if want.recurrenceOf && o.Inc.RecurrenceOf != "" {
			keys = append(keys, o.Inc.RecurrenceOf)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := ls.Incidents.LoadAll(x.ctx, keys)
	return err
}

// termCount is how many terms appendTerms may append for objs' field: room
// for them all, made at once.
func termCount(objs []*model.Incident, field string) int {
	n := 0
	for _, o := range objs {
		if _, slugs, list := termSlugs(o, field); list {
			n += len(slugs)
		} else {
			n++ // rootCause, severity: one or none
		}
	}
	return n
}

// termSlugs is the kind and slugs of o's term list field (domains,
// symptoms, components, contributing); list is false for the others.
func termSlugs(o *model.Incident, field string) (kind incidentlib.TermKind, slugs []string, list bool) {
	switch field {
	case "domains":
		return incidentlib.KindDomain, o.Inc.Domain, true
	case "symptoms":
		return incidentlib.KindSymptom, o.Inc.Symptoms, true
	case "components":
		return incidentlib.KindComponent, o.Inc.Components, true
	case "contributing":
		return incidentlib.KindContributing, o.Inc.Contributing, true
	}
	return "", nil, false
}

// appendTerms appends the terms of o's field (domains, symptoms, ...) to
// all, as the field's method gives them, without a slice per incident.
func appendTerms(all []*model.TaxonomyTerm, o *model.Incident, field string) []*model.TaxonomyTerm {
	kind, slugs, list := termSlugs(o, field)
	if !list {
		var t *model.TaxonomyTerm
		switch field {
		case "rootCause":
			t = o.RootCause()
		case "severity":
			t = o.Severity()
		}
		if t != nil {
			all = append(all, t)
		}
		return all
	}
	for _, s := range slugs {
		if t := o.View.Term(kind, s); t != nil {
			all = append(all, t)
		}
	}
	return all
}

// appendLoaded appends to keys the lists l holds for ids (the incidents'
// recurrences or the incidents that name them as related), in one batch.
func appendLoaded(ctx context.Context, keys, ids []string, l *Loader[string, []string]) ([]string, error) {
	lists, err := l.LoadAll(ctx, ids)
	if err != nil {
		return keys, err
	}
	for _, r := range lists {
		keys = append(keys, r...)
	}
	return keys, nil
}

func (x *fastExec) flatten(lists [][]*model.Incident, sel ast.SelectionSet) *incidentsByParent {
	offs := make([]int, 1, len(lists)+1)
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	all := make([]*model.Incident, 0, n)
	for _, l := range lists {
		all = append(all, l...)
		offs = append(offs, len(all))
	}
	return &incidentsByParent{all: x.incidents(all, sel), offs: offs}
}

func (b *incidents) writeRange(x *fastExec, from, to int) {
	x.list(to-from, func(k int) { b.write(x, from+k) })
}

func (b *incidents) write(x *fastExec, k int) {
	o := b.objs[k]
	if o == nil {
		bail() // a null in a non-null position: gqlgen reports it
	}
	inc := o.Inc
	x.byte('{')
	for i := range b.plan.fields {
		f := &b.plan.fields[i]
		x.key(i, f)
		switch f.Name {
		case "__typename":
			x.str("Incident")
		case "id":
			x.str(inc.ID)
		case "org":
			x.str(inc.Org)
		case "orgSlug":
			x.str(inc.OrgSlug)
		case "date":
			x.optStr(o.Date())
		case "dateKind":
			x.optStr(o.DateKind())
		case "title":
			x.optStr(o.Title(f.lang))
		case "summary":
			x.optStr(o.Summary(f.lang))
		case "lessons":
			x.optStr(o.Lessons(f.lang))
		case "trigger":
			x.optStr(o.Trigger(f.lang))
		case "detection":
			x.optStr(o.Detection(f.lang))
		case "symptomsText":
			x.optStr(o.SymptomsText(f.lang))
		case "languages":
			x.byte('[')
			for n, l := range o.Languages() {
				if n > 0 {
					x.byte(',')
				}
				x.str(string(l))
			}
			x.byte(']')
		case "impact":
			x.impact(o.Impact(), f.Selections)
		case "timeline":
			x.timeline(o.Timeline(), f.Selections)
		case "remediation":
			x.items(o.Remediation(), f.Selections)
		case "actionItems":
			x.items(o.ActionItems(), f.Selections)
		case "events":
			x.events(o.Events(), f.Selections) // fast_events.go
		case "sources":
			x.sources(o.Sources(), f.Selections)
		case "docs":
			x.byte('[')
			for n, d := range o.Docs() {
				if len(d) == 0 {
					bail() // null in a non-null position
				}
				if n > 0 {
					x.byte(',')
				}
				x.marshal(model.MarshalJSON(d))
			}
			x.byte(']')
		case "relatedIds":
			x.byte('[')
			for n, id := range o.RelatedIds() {
				if n > 0 {
					x.byte(',')
				}
				x.str(id)
			}
			x.byte(']')
		case "recurrenceOfId":
			x.optStr(o.RecurrenceOfID())
		case "review":
			x.review(o.Review(), f.Selections)
		case "updatedAt":
			x.optStr(o.UpdatedAt())
		case "url":
			x.optStr(o.URL())
		case "extra":
			x.marshal(model.MarshalJSON(o.Extra()))
		case "verification":
			x.str(string(o.Verification()))
		case "version":
			x.int(inc.CurrentVersion())
		case "createdAt":
			x.optStr(o.CreatedAt())
		case "reviewState":
			x.str(string(inc.State()))
		case "textOrigin":
			x.str(string(o.TextOrigin(f.lang)))
		case "organizations":
			r := b.rel[i].(*incidentOrgsByParent)
			r.writeRange(x, r.offs[k], r.offs[k+1])
		case "organization":
			b.rel[i].(*organizations).write(x, k)
		case "related", "recurrences", "relatedBy":
			r := b.rel[i].(*incidentsByParent)
			r.all.writeRange(x, r.offs[k], r.offs[k+1])
		case "recurrenceOf":
			r := b.rel[i].(*incidentsByParent)
			if r.offs[k] == r.offs[k+1] {
				x.null()
			} else {
				r.all.write(x, r.offs[k])
			}
		case "domains", "symptoms", "components", "contributing":
			r := b.rel[i].(*termsByParent)
			r.all.writeRange(x, r.offs[k], r.offs[k+1])
		case "rootCause", "severity":
			r := b.rel[i].(*termsByParent)
			if r.offs[k] == r.offs[k+1] {
				x.null()
			} else {
				r.all.write(x, r.offs[k])
			}
		default: // a field not written here is in FastReadsHandsOn
			bail()
		}
	}
	x.byte('}')
}

// incidentOrgsByParent are the organizations (with roles) of each of a
// list's incidents, as one list: parent k's are objs[offs[k]:offs[k+1]].
type incidentOrgsByParent struct {
	objs []*model.IncidentOrganization
	plan *plan
	orgs []*organizations // per field of the plan: the organizations of "organization"
	offs []int
}

func (x *fastExec) incidentOrgs(lists [][]*model.IncidentOrganization, sel ast.SelectionSet) *incidentOrgsByParent {
	offs := make([]int, 1, len(lists)+1)
	var all []*model.IncidentOrganization
	for _, l := range lists {
		all = append(all, l...)
		offs = append(offs, len(all))
	}
	p := x.plan(sel, "IncidentOrganization")
	b := &incidentOrgsByParent{objs: all, plan: p, orgs: make([]*organizations, len(p.fields)), offs: offs}
	for i := range p.fields {
		if p.fields[i].Name == "organization" {
			objs := make([]*model.Organization, len(all))
			for k, io := range all {
				objs[k] = io.Organization
			}
			b.orgs[i] = x.organizations(objs, p.fields[i].Selections)
		}
	}
	return b
}

func (b *incidentOrgsByParent) writeRange(x *fastExec, from, to int) {
	x.list(to-from, func(k int) {
		io := b.objs[from+k]
		if io == nil {
			bail()
		}
		x.object(b.plan, "IncidentOrganization", func(f *pfield) {
			switch f.Name {
			case "organization":
				b.orgs[f.index].write(x, from+k)
			case "role":
				x.str(string(io.Role))
			default:
				bail()
			}
		})
	})
}
