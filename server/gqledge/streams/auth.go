package streams

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
)

// Identity per operation, not per connection. A stream (an SSE request, a
// WebSocket connection) is opened with a bearer token; the token may be
// revoked or expire while it is open. Every judgement of the token goes
// through the one place that judges HTTP requests (Options.Authenticate,
// admin.Auth.Authenticate):
//
//   - each graphql-transport-ws subscribe message (a query, a mutation or
//     a subscription) re-authenticates the connection's token, and runs
//     with the identity found then; a token that no longer authenticates
//     ends the connection (auth.go: closeUnauthorized, 4401);
//   - every open stream's token is judged again every TokenRecheck (the
//     bound on another cluster node, and on expiry), and at once after a
//     mutation that needs the admin role (revokeToken among them) has run
//     on this node (tokenWatch); a stream whose token fails ends: SSE with
//     a next event carrying UNAUTHENTICATED then complete, WebSocket with
//     an error message UNAUTHENTICATED for each operation then close 4401;
//   - each event is sent only while its stream's token still holds.
//
// A token is looked up in memory by the token service (storage keeps the
// tokens in memory): a re-check reads nothing from the file, and is done
// once per distinct token, not per stream.

// credential is the token a stream was opened with, judged again while
// the stream lives.
type credential struct {
	l      *liveServer
	header string        // the Authorization value; "" for an anonymous reader, never judged again
	base   *http.Request // the request it came with, re-authenticated with header
	id     incidentlib.Identity
	ctx    context.Context // cancelled with the refusal when the token fails, or by release
	cancel context.CancelCauseFunc
}

// errReleased is the cause of a credential whose stream ended by itself.
var errReleased = errors.New("streams: the stream ended")

// newCredential makes the credential of r (authenticated: its identity in
// its context) with header, its token, under parent; it is judged again
// until release.
func (l *liveServer) newCredential(parent context.Context, r *http.Request, header string) *credential {
	c := &credential{l: l, header: header, base: r}
	c.id, _ = incidentlib.IdentityFrom(r.Context())
	c.ctx, c.cancel = context.WithCancelCause(parent)
	if header != "" {
		l.creds.add(l, c)
	}
	return c
}

// release ends the credential's judging (its stream ended).
func (c *credential) release() {
	if c.header != "" {
		c.l.creds.remove(c)
	}
	c.cancel(errReleased)
}

// failed is the refusal of a token that no longer authenticates, nil
// while it does (or when the stream ended by itself).
func (c *credential) failed() error {
	if err := context.Cause(c.ctx); err != nil && err != errReleased {
		return err
	}
	return nil
}

// fail ends every stream of the credential with err (UNAUTHENTICATED).
func (c *credential) fail(err error) { c.cancel(err) }

// reauthenticate judges the token now: the request with the identity
// found, or the refusal (the caller fails the credential).
func (c *credential) reauthenticate() (*http.Request, error) {
	if c.header == "" {
		return c.base, nil
	}
	r, err := c.l.authenticate(c.base, c.header)
	if err == nil {
		if id, _ := incidentlib.IdentityFrom(r.Context()); id != c.id {
			err = incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "the bearer token is no longer the token the connection was opened with")
		}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// authenticate is Options.Authenticate over base with the Authorization
// header value header: the request with its identity, or EUNAUTHENTICATED.
func (l *liveServer) authenticate(base *http.Request, header string) (*http.Request, error) {
	authenticate := l.e.Authenticator()
	if authenticate == nil {
		return nil, incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "this server takes no bearer tokens")
	}
	r := base.Clone(context.WithoutCancel(base.Context()))
	r.Header.Set("Authorization", header)
	ar, err := authenticate(r)
	if err != nil {
		if incidentlib.ErrorCode(err) != incidentlib.EUNAUTHENTICATED {
			err = incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "%s", incidentlib.ErrorMessage(err))
		}
		return nil, err
	}
	return ar, nil
}

// credentials are the credentials of the open streams, judged again every
// TokenRecheck by one goroutine that runs while there are any.
type credentials struct {
	mu      sync.Mutex
	set     map[*credential]struct{}
	running bool
}

func (cs *credentials) add(l *liveServer, c *credential) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.set == nil {
		cs.set = map[*credential]struct{}{}
	}
	cs.set[c] = struct{}{}
	if !cs.running {
		cs.running = true
		go l.watchTokens()
	}
}

func (cs *credentials) remove(c *credential) {
	cs.mu.Lock()
	delete(cs.set, c)
	cs.mu.Unlock()
}

// watchTokens re-checks the open streams' tokens every TokenRecheck while
// there are any.
func (l *liveServer) watchTokens() {
	t := time.NewTicker(l.opts.TokenRecheck)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.stop:
			l.creds.mu.Lock()
			l.creds.running = false
			l.creds.mu.Unlock()
			return
		}
		l.creds.mu.Lock()
		if len(l.creds.set) == 0 {
			l.creds.running = false
			l.creds.mu.Unlock()
			return
		}
		l.creds.mu.Unlock()
		l.recheckTokens()
	}
}

// recheckTokens judges every open stream's token now, once per distinct
// token, and fails the streams of those that no longer authenticate as
// they did.
func (l *liveServer) recheckTokens() {
	l.creds.mu.Lock()
	byHeader := map[string][]*credential{}
	for c := range l.creds.set {
		byHeader[c.header] = append(byHeader[c.header], c)
	}
	l.creds.mu.Unlock()
	for header, cs := range byHeader {
		r, err := l.authenticate(cs[0].base, header)
		var id incidentlib.Identity
		if err == nil {
			id, _ = incidentlib.IdentityFrom(r.Context())
		}
		for _, c := range cs {
			switch {
			case err != nil:
				c.fail(err)
			case id != c.id:
				c.fail(incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "the bearer token is no longer the token the stream was opened with"))
			}
		}
	}
}

// tokenWatch is the gqlgen extension that judges the open streams' tokens
// again as soon as a mutation that needs the admin role (revokeToken,
// createToken, which replaces an expired token of the same name) has run
// on this server, before its response is written: a revoked token's
// streams end at once on the node that revoked it.
type tokenWatch struct{ l *liveServer }

func (tokenWatch) ExtensionName() string                   { return "LiveTokenWatch" }
func (tokenWatch) Validate(graphql.ExecutableSchema) error { return nil }

func (w tokenWatch) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Mutation {
		return next(ctx)
	}
	if need, _ := graph.RequiredRole(oc); need < incidentlib.RoleAdmin {
		return next(ctx)
	}
	rh := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		resp := rh(ctx)
		w.l.recheckTokens()
		return resp
	}
}
