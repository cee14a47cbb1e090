package graph

import (
	"context"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// Helpers of the mutation resolvers (mutation.resolvers.go, which gqlgen
// rewrites).

type writerKey struct{}

// WithWriter grants the request's mutations the right to write through w,
// the library's one write side (incidentlib.Writer): every mutation
// writes through it, never through the resolver's reads. The server
// grants it per request, after checking the token; a mutation without it
// is refused with READ_ONLY.
func WithWriter(ctx context.Context, w incidentlib.Writer) context.Context {
	return context.WithValue(ctx, writerKey{}, w)
}

// writer returns the writer the server granted the request.
func writer(ctx context.Context) (incidentlib.Writer, error) {
	if w, ok := ctx.Value(writerKey{}).(incidentlib.Writer); ok && w != nil {
		return w, nil
	}
	return nil, incidentlib.Errorf(incidentlib.EREADONLY, "this request may not write")
}

// writerAs is writer once the request holds the role need, with the
// request's identity (author).
func writerAs(ctx context.Context, need incidentlib.Role) (incidentlib.Writer, incidentlib.Identity, error) {
	w, err := writer(ctx)
	if err != nil {
		return nil, incidentlib.Identity{}, err
	}
	id, err := author(ctx, need)
	if err != nil {
		return nil, id, err
	}
	return w, id, nil
}

// incidentPayload answers a mutation that writes one incident: the stored
// record, or the user errors in err (fields under prefix). Other errors
// are returned as they are.
func incidentPayload(ctx context.Context, r *Resolver, stored *incidentlib.Incident, prefix []string, err error) (*model.IncidentPayload, error) {
	if err != nil {
		ues, ok := model.UserErrors(prefix, err)
		if !ok {
			return nil, err
		}
		return &model.IncidentPayload{UserErrors: ues}, nil
	}
	return &model.IncidentPayload{Incident: r.view(ctx).NewIncident(stored), UserErrors: []*model.UserError{}}, nil
}

// importAuthor makes the token the author of a record an import writes:
// an admin's records keep their review as given (the author defaults to
// the admin's name); an editor's or reviewer's are written by the token's
// name and their review is the store's (ImportOptions.Draft: a new or
// changed record is DRAFT). Importing a record that carries a review
// (reviewedAt, reviewedBy) is an admin's operation: a review is a
// reviewer's, through reviewIncident.
func importAuthor(inc *incidentlib.Incident, by incidentlib.Identity, prefix []string) []*model.UserError {
	if by.Role.Allows(incidentlib.RoleAdmin) {
		if inc.Review.WrittenBy == "" {
			inc.Review.WrittenBy = by.Name
		}
		return nil
	}
	if inc.Review.ReviewedAt != "" || inc.Review.ReviewedBy != "" {
		return []*model.UserError{{Field: append(append([]string(nil), prefix...), "review"), Code: model.UserErrorCodeInvalid,
			Message: "only an admin token may import records that carry a review (reviewedAt, reviewedBy); review them with reviewIncident"}}
	}
	inc.Review = incidentlib.Review{WrittenBy: by.Name, Extra: inc.Review.Extra}
	return nil
}
