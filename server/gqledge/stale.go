package gqledge

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// Stale reads: a server whose store may be behind its source (a cluster
// node without a quorum, Options.Stale) marks every GraphQL response with
// extensions.stale, and the response cache steps aside while it is so
// (caching.go): no lookup, no store. A hit would replay bytes without the
// mark, and a marked response, once stored, would be replayed marked after
// the quorum is back; marking stored bytes on the way out instead would
// mean editing every replayed body and its ETag. Skipping the cache costs a stale node
// its hits, which matter little while it cannot take writes, and costs
// the normal path one nil check.

// StaleHeader is the response header that says a response was served
// while the server's reads may be behind (server.Config.Stale), with the
// value "true"; absent otherwise. Cross-origin readers may read it (cors.go).
const StaleHeader = "Incidentlib-Stale"

// stale reports whether the server's reads may be behind, now.
func (o *Edge) stale() bool { return o.staleFunc != nil && o.staleFunc() }

// staleMark is the gqlgen extension that marks a response with
// extensions.stale while stale() holds, and keeps it out of the cache.
type staleMark struct{ stale func() bool }

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = staleMark{}

func (staleMark) ExtensionName() string                   { return "StaleMark" }
func (staleMark) Validate(graphql.ExecutableSchema) error { return nil }

func (s staleMark) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil || !s.stale() {
		return resp
	}
	if resp.Extensions == nil {
		resp.Extensions = map[string]any{}
	}
	resp.Extensions["stale"] = true
	if st := stateOf(ctx); st != nil && st.slot != nil {
		st.slot.noStore = true // marked for now, not for later readers
	}
	return resp
}
