package admin

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
)

// readOnlyGuard answers every mutation with READ_ONLY on a replica, before
// any resolver runs, naming the primary that takes writes.
type readOnlyGuard struct {
	primary string
	present graphql.ErrorPresenterFunc
}

// ReadOnlyReplica is the gqlgen extension of a read-only replica of the
// library at primary: every mutation answers READ_ONLY, naming the
// primary, made into a GraphQL error by present. It goes before any other
// guard of mutations.
func ReadOnlyReplica(primary string, present graphql.ErrorPresenterFunc) graphql.HandlerExtension {
	return readOnlyGuard{primary: primary, present: present}
}

func (readOnlyGuard) ExtensionName() string                   { return "ReadOnlyReplica" }
func (readOnlyGuard) Validate(graphql.ExecutableSchema) error { return nil }

func (g readOnlyGuard) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Mutation {
		return next(ctx)
	}
	e := g.present(ctx, incidentlib.Errorf(incidentlib.EREADONLY,
		"this server is a read-only replica of %s: send mutations to the primary", g.primary))
	e.Extensions["primary"] = g.primary
	return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{e}})
}
