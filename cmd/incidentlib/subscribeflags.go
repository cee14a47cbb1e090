package main

import (
	"time"

	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// subscribeFlags are serve's flags of GraphQL subscriptions (live/,
// server/gqledge/live.go, docs/subscriptions.md): the limits in
// subscriptions, the buffer in events, and the streams' timings.
type subscribeFlags struct {
	maxTotal, maxPerClient, buffer       *int
	keepAlive, writeTimeout, initTimeout *durationFlag
	idleTimeout                          *durationFlag
	tokenRecheck                         *durationFlag
	connsPerClient                       *int
}

type durationFlag = time.Duration

func addSubscribeFlags(f *flags) *subscribeFlags {
	return &subscribeFlags{
		maxTotal: f.count("subscriptions-max", live.DefaultMaxTotal, 1,
			"subscriptions the server holds at once, over SSE and WebSocket together, in subscriptions; past it, SUBSCRIPTION_LIMIT (HTTP 429, WebSocket close 4429)"),
		maxPerClient: f.count("subscriptions-per-client", live.DefaultMaxPerClient, 1,
			"subscriptions one client holds at once (a client is its bearer token, else its IP address), in subscriptions; past it, SUBSCRIPTION_LIMIT"),
		buffer: f.count("subscription-buffer", live.DefaultBuffer, 1,
			"events a subscriber may fall behind, in events; past it the subscription ends with UNAVAILABLE and the client resumes with since"),
		keepAlive: f.duration("subscription-keepalive", gqledge.DefaultKeepAlive, false,
			"interval of the streams' keep-alive pings (an SSE comment, a graphql-transport-ws ping)"),
		writeTimeout: f.duration("subscription-write-timeout", gqledge.DefaultStreamWrite, false,
			"deadline of each write of a stream (streams are exempt from --read-timeout and --write-timeout); a client that takes longer is disconnected"),
		initTimeout: f.duration("subscription-init-timeout", gqledge.DefaultInitTimeout, false,
			"how long a WebSocket may take to send connection_init (then close 4408)"),
		idleTimeout: f.duration("subscription-idle-timeout", gqledge.DefaultSubscriptionsIdle, false,
			"how long a WebSocket may hold no subscription before it is closed"),
		tokenRecheck: f.duration("subscription-token-recheck", gqledge.DefaultTokenRecheck, false,
			"how often the token of every open stream is judged again: a token revoked on another node, or expired, ends its streams within it (UNAUTHENTICATED, WebSocket close 4401)"),
		connsPerClient: f.count("subscription-conns-per-client", gqledge.DefaultConnsPerClient, 1,
			"streams (SSE requests and WebSocket connections together) one client holds open at once, in connections; past it, SUBSCRIPTION_LIMIT (HTTP 429)"),
	}
}

// config adds the subscription settings to cfg.
func (s *subscribeFlags) config(cfg server.Config) server.Config {
	cfg.SubscriptionLimits = live.Options{MaxTotal: *s.maxTotal, MaxPerClient: *s.maxPerClient, Buffer: *s.buffer}
	cfg.Subscriptions = gqledge.LiveOptions{KeepAlive: *s.keepAlive, WriteTimeout: *s.writeTimeout,
		InitTimeout: *s.initTimeout, IdleTimeout: *s.idleTimeout, TokenRecheck: *s.tokenRecheck, MaxConnsPerClient: *s.connsPerClient}
	return cfg
}
