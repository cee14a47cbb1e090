package gqledge

import (
	"context"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
)

// The seam between the edge and the subscription transports
// (server/gqledge/streams, which imports this package): the edge adds the
// transports a StreamsMaker makes before its GET and POST (which would
// take a stream's request as theirs), routes stream requests past its
// HTTP checks and response cache, and ends the streams at shutdown; the
// transports authenticate, limit and refuse through the edge's methods
// below, so that a stream is judged by the same guard as a query.

// Streams are the subscription transports of an edge.
type Streams interface {
	// Transports are added to gqlgen's handler before GET and POST.
	Transports() []graphql.Transport
	// Extension is used on gqlgen's handler when the transports are added
	// (the token watch: a revoked token's streams end at once).
	Extension() graphql.HandlerExtension
	// Serves says whether r asks for a stream (a WebSocket upgrade or an
	// SSE request).
	Serves(r *http.Request) bool
	// Stop ends every stream with a completion and refuses new ones.
	Stop()
	// Wait waits until every stream has ended, or ctx.
	Wait(ctx context.Context) error
}

// StreamsMaker makes the subscription transports of e with opts, their
// defaults applied (streams.New).
type StreamsMaker func(e *Edge, opts LiveOptions) (Streams, error)

// Registerer is the registry of the edge's metrics.
func (e *Edge) Registerer() prometheus.Registerer { return e.m.Registerer() }

// Limits are the edge's limits (--max-body, --request-timeout...).
func (e *Edge) Limits() Limits { return e.guard.lim }

// Authenticator is Options.Authenticate; nil when the server takes no
// bearer tokens.
func (e *Edge) Authenticator() func(*http.Request) (*http.Request, error) {
	return e.guard.authenticate
}

// ClientKey names the client of r for the rate limit and the streams per
// client: its token's name, else its address (through the trusted proxy
// header, if any).
func (e *Edge) ClientKey(r *http.Request) string { return clientKey(r, e.guard.proxy) }

// RateLimited says whether a rate limit is on.
func (e *Edge) RateLimited() bool { return e.guard.rate != nil }

// AdmitRate applies the rate limit's admission to client: ok, or the
// Retry-After value (seconds) of the refusal. Always ok without a rate
// limit.
func (e *Edge) AdmitRate(client string) (ok bool, retry string) {
	if e.guard.rate == nil {
		return true, ""
	}
	ok, d := e.guard.rate.admits(client)
	if ok {
		return true, ""
	}
	return false, retryAfter(d)
}

// OriginAllowed says whether origin is one of --cors-origins.
func (e *Edge) OriginAllowed(origin string) bool { return e.guard.origins.allows(origin) }

// StreamOp is the edge's state of one operation of a stream: its client
// and deadline, which the limits read, and the status and headers a
// refusal set.
type StreamOp struct {
	rq *request
	rp *reply
}

// WithStreamOp is ctx carrying a new operation of client's stream, with
// deadline, for gqlgen's executor and the edge's extensions.
func WithStreamOp(ctx context.Context, client string, deadline time.Time) (context.Context, *StreamOp) {
	op := &StreamOp{rq: &request{client: client, deadline: deadline}, rp: &reply{header: http.Header{}}}
	ctx = context.WithValue(ctx, requestKey{}, op.rq)
	ctx = context.WithValue(ctx, replyKey{}, op.rp)
	return ctx, op
}

// Deadline is the operation's deadline.
func (op *StreamOp) Deadline() time.Time { return op.rq.deadline }

// SetDeadline moves the operation's deadline (each event of a
// subscription runs under the request timeout again).
func (op *StreamOp) SetDeadline(t time.Time) { op.rq.deadline = t }

// Status is the HTTP status a refusal set (a rate limit's 429); 0 if none.
func (op *StreamOp) Status() int { return op.rp.status }

// Header holds the headers a refusal set (Retry-After).
func (op *StreamOp) Header() http.Header { return op.rp.header }

// DecodeQuery decodes the GraphQL parameters of a GET query string, as
// the GET transport does (DecodeBody those of a POST body).
func DecodeQuery(rawQuery string) (graphql.RawParams, error) {
	w, err := decodeQuery(rawQuery)
	if err != nil {
		return graphql.RawParams{}, err
	}
	return w.params, nil
}
