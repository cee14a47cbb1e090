package graph

import (
	"context"
	"strconv"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// Subscriptions (subscription.resolvers.go) are started by the transport
// that carries them (server/gqledge: SSE and graphql-transport-ws), which
// puts a LiveStart in the operation's context: the resolver parses the
// arguments and hands them to Start, and returns Events, into which the
// transport puts each event when it has the event's selection executed.

// LiveStart is what a subscription's transport gives its resolver.
type LiveStart struct {
	// Start registers the subscription (filter nil: every incident; since
	// nil: from now on) or returns why not.
	Start func(ctx context.Context, filter *incidentlib.IncidentFilter, since *string) error
	// Events is the channel the resolver returns (capacity 1).
	Events chan *model.IncidentChange
}

type liveStartKey struct{}

// WithLiveStart returns ctx carrying st for the subscription resolver.
func WithLiveStart(ctx context.Context, st *LiveStart) context.Context {
	return context.WithValue(ctx, liveStartKey{}, st)
}

func liveStartFrom(ctx context.Context) *LiveStart {
	st, _ := ctx.Value(liveStartKey{}).(*LiveStart)
	return st
}

// IncidentChangeOf is the GraphQL view of change c, in the language of
// ctx's request, with whether it matches the subscriber's filter.
func (r *Resolver) IncidentChangeOf(ctx context.Context, c *incidentlib.Change, matches bool) *model.IncidentChange {
	ic := &model.IncidentChange{Seq: strconv.FormatUint(c.Seq, 10), Action: incidentlib.ActionOf(*c), IncidentID: c.ID, MatchesFilter: matches}
	if !c.Deleted && c.Incident != nil {
		ic.Incident = r.view(ctx).NewIncident(c.Incident)
	}
	return ic
}

// EventContext returns ctx with a fresh set of loaders for one event of a
// subscription (a long subscription must not read through the loaders'
// caches of its start), and their release.
func (r *Resolver) EventContext(ctx context.Context) (context.Context, func()) {
	ls := NewLoaders(ctx, r)
	return context.WithValue(ctx, loadersKey{}, ls), ls.release
}
