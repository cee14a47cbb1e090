package gqledge

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// Stale reads: a server whose reads may be behind its source (a cluster
// node without a quorum, Options.Stale) marks every response it sends
// while so: the header StaleHeader on every response (requestLog, around
// the whole handler: the REST API, the exports, GraphQL), and
// extensions.stale on GraphQL responses (staleMark). The response cache
// steps aside for GraphQL meanwhile (caching.go): no lookup, no store. A
// hit would replay bytes without the mark, and a marked response, once
// stored, would be replayed marked after the quorum is back; marking
// stored bytes on the way out instead would mean editing every replayed
// body and its ETag. Skipping the cache costs a stale node its hits,
// which matter little while it cannot take writes; the normal path pays
// one nil check. The exports' cached bytes carry no mark (downloads store
// only their Content-Type), so they are replayed with the header.
//
// Options.Stale is asked once when a request comes (reqState.stale, which
// the header and the cache follow), and again by staleMark for each
// GraphQL response it makes, since a subscription's events come long
// after the stream opened.

// StaleHeader is the response header that says a response was served
// while the server's reads may be behind (server.Config.Stale), with the
// value "true"; absent otherwise. Cross-origin readers may read it (cors.go).
const StaleHeader = "Incidentlib-Stale"

var staleValue = []string{"true"}

// stale reports whether the server's reads may be behind, for the request
// whose state is st: as read when it came, or now outside requestLog.
func (o *Edge) stale(st *reqState) bool {
	if o.staleFunc == nil {
		return false
	}
	if st != nil {
		return st.stale
	}
	return o.staleFunc()
}

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
