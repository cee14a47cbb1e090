package gqledge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/live"
)

// The options of subscriptions, which the subscription transports
// (server/gqledge/streams) serve: Options.Live, with its defaults.

// Defaults of LiveOptions.
const (
	DefaultKeepAlive         = 15 * time.Second
	DefaultStreamWrite       = 10 * time.Second
	DefaultInitTimeout       = 10 * time.Second
	DefaultSubscriptionsIdle = 5 * time.Minute
	// DefaultConnsPerClient is LiveOptions.MaxConnsPerClient's default, in
	// connections: as many as the hub's subscriptions per client, so that
	// a client of SSE (one connection per subscription) reaches its
	// subscriptions' limit first.
	DefaultConnsPerClient = 100
)

// LiveOptions configure subscriptions; zero durations take the defaults,
// negative ones are refused.
type LiveOptions struct {
	// Hub hands out the store's changes (live.New over the store).
	Hub *live.Hub
	// KeepAlive is the interval of keep-alive pings (SSE comments,
	// graphql-transport-ws ping messages). DefaultKeepAlive.
	KeepAlive time.Duration
	// WriteTimeout bounds each write of a stream (streams are exempt from
	// the HTTP server's whole-request timeouts). DefaultStreamWrite.
	WriteTimeout time.Duration
	// InitTimeout is how long a WebSocket may take to send
	// connection_init (close 4408). DefaultInitTimeout.
	InitTimeout time.Duration
	// IdleTimeout closes a WebSocket that has held no subscription for so
	// long. DefaultSubscriptionsIdle.
	IdleTimeout time.Duration
	// TokenRecheck is how often the token of every open stream is judged
	// again (a token revoked on another cluster node, or expired, ends its
	// streams within it; streams/auth.go). DefaultTokenRecheck.
	TokenRecheck time.Duration
	// MaxConnsPerClient is how many streams (SSE requests and WebSocket
	// connections together) one client (its bearer token, else its IP
	// address) holds open at once, in connections; past it
	// SUBSCRIPTION_LIMIT (HTTP 429). DefaultConnsPerClient.
	MaxConnsPerClient int
	// EventContext gives each event's execution fresh loaders
	// (graph.Resolver.EventContext); ChangeOf is the GraphQL view of a
	// change (graph.Resolver.IncidentChangeOf).
	EventContext func(context.Context) (context.Context, func())
	ChangeOf     func(context.Context, *incidentlib.Change, bool) *model.IncidentChange
}

func (o *LiveOptions) withDefaults() error {
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"keep-alive interval", &o.KeepAlive, DefaultKeepAlive}, {"write timeout", &o.WriteTimeout, DefaultStreamWrite},
		{"init timeout", &o.InitTimeout, DefaultInitTimeout}, {"idle timeout", &o.IdleTimeout, DefaultSubscriptionsIdle},
		{"token re-check interval", &o.TokenRecheck, DefaultTokenRecheck}} {
		switch {
		case *d.v == 0:
			*d.v = d.def
		case *d.v < 0:
			return fmt.Errorf("the subscriptions' %s must be positive, got %s", d.name, *d.v)
		}
	}
	switch {
	case o.MaxConnsPerClient == 0:
		o.MaxConnsPerClient = DefaultConnsPerClient
	case o.MaxConnsPerClient < 0:
		return fmt.Errorf("the streams per client must be positive, got %d", o.MaxConnsPerClient)
	}
	if o.Hub == nil || o.EventContext == nil || o.ChangeOf == nil {
		return errors.New("subscriptions need a hub, EventContext and ChangeOf")
	}
	return nil
}

// DefaultTokenRecheck is LiveOptions.TokenRecheck's default.
const DefaultTokenRecheck = 2 * time.Second
