package graph

import (
	"context"
	"fmt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// Helpers of the taxonomy's and the organizations' administration
// (taxadmin.resolvers.go, which gqlgen rewrites).

// taxonomyAdmin returns the request's writer for the taxonomy's and the
// organizations' writes and the author of the request, once the request
// is an admin's.
func (r *Resolver) taxonomyAdmin(ctx context.Context) (incidentlib.TaxonomyWriter, string, error) {
	w, id, err := writerAs(ctx, incidentlib.RoleAdmin)
	if err != nil {
		return nil, "", err
	}
	return w, id.Name, nil
}

// taxonomyHistory returns the history's reads, once the request is an
// admin's.
func (r *Resolver) taxonomyHistory(ctx context.Context) (incidentlib.TaxonomyHistoryReader, error) {
	return guarded(ctx, incidentlib.RoleAdmin, r.TaxonomyChanges, "taxonomy history")
}

// taxonomy is the taxonomy as of now: the store's (Taxonomies), which an
// admin's change replaces, or the fixed Taxonomy.
func (r *Resolver) taxonomy() *incidentlib.Taxonomy {
	if r.Taxonomies != nil {
		if t := r.Taxonomies.Taxonomy(); t != nil {
			return t
		}
	}
	return r.Taxonomy
}

// termText converts a term's text input; nil for none.
func termText(t *model.TermTextInput) *incidentlib.Text {
	if t == nil {
		return nil
	}
	out := &incidentlib.Text{}
	if t.En != nil {
		out.En = *t.En
	}
	if t.Ko != nil {
		out.Ko = *t.Ko
	}
	return out
}

// userPayload answers a mutation: refused(the user errors of err) for a
// client's mistake, err itself for any other error, done() when err is
// nil.
func userPayload[P any](err error, refused func([]*model.UserError) P, done func() P) (P, error) {
	if err != nil {
		ues, ok := model.UserErrors(nil, err)
		if !ok {
			var zero P
			return zero, err
		}
		return refused(ues), nil
	}
	return done(), nil
}

// termChange runs change, an admin's change of a term of kind, and
// answers with the term's payload: an unknown kind is the payload's error,
// as the change's errors are.
func (r *Resolver) termChange(ctx context.Context, kind model.TaxonomyKind,
	change func(ta incidentlib.TaxonomyWriter, who string, k incidentlib.TermKind) (*incidentlib.Term, error)) (*model.TermPayload, error) {
	ta, who, err := r.taxonomyAdmin(ctx)
	if err != nil {
		return nil, err
	}
	k, err := termKind(kind)
	if err != nil {
		return r.termPayload(ctx, nil, err)
	}
	t, err := change(ta, who, k)
	return r.termPayload(ctx, t, err)
}

// termPayload answers a term mutation.
func (r *Resolver) termPayload(ctx context.Context, t *incidentlib.Term, err error) (*model.TermPayload, error) {
	return userPayload(err,
		func(ues []*model.UserError) *model.TermPayload { return &model.TermPayload{UserErrors: ues} },
		func() *model.TermPayload {
			return &model.TermPayload{Term: r.view(ctx).NewTerm(t), UserErrors: []*model.UserError{}}
		})
}

// orgPayload answers an organization mutation.
func orgPayload(o *incidentlib.Organization, ids []string, err error) (*model.OrganizationPayload, error) {
	return userPayload(err,
		func(ues []*model.UserError) *model.OrganizationPayload {
			return &model.OrganizationPayload{IncidentIds: []string{}, UserErrors: ues}
		},
		func() *model.OrganizationPayload {
			if ids == nil {
				ids = []string{}
			}
			return &model.OrganizationPayload{Organization: &model.Organization{Organization: o}, IncidentIds: ids, UserErrors: []*model.UserError{}}
		})
}

// historyEntry is the GraphQL view of an entry of the history.
func historyEntry(c *incidentlib.TaxonomyChange) *model.TaxonomyHistoryEntry {
	ids := c.Incidents
	if ids == nil {
		ids = []string{}
	}
	return &model.TaxonomyHistoryEntry{
		Number: int(c.Number), At: c.At, Author: c.Author, Action: model.TaxonomyChangeAction(c.Action),
		Subject: c.Subject, Before: c.Before, After: c.After, IncidentIds: ids,
	}
}

// termKind converts the GraphQL kind, refusing one gqlgen let through
// that the domain does not know.
func termKind(k model.TaxonomyKind) (incidentlib.TermKind, error) {
	kind := model.TermKindOf(k)
	if !kind.IsValid() {
		return "", incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"kind"}, "kind %q is not a taxonomy kind", fmt.Sprint(k))
	}
	return kind, nil
}

// taxAdminComplexity adds the costs of the history's connection.
func taxAdminComplexity(c *ComplexityRoot) {
	c.Query.TaxonomyHistory = func(child int, first *int, _ *string) int {
		return costList(pageSize(first, nil), child)
	}
	c.TaxonomyTerm.Aliases = func(child int) int { return 1 }
}
