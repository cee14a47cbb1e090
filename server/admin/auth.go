// Package admin holds what only the library's operator may do, and the
// checks that keep everyone else out: who sends a request and what its
// role allows (auth.go: the bootstrap admin token, the API tokens and the
// role guard); the read-only guard of a replica (replica.go); backups of
// the store (GET /admin/backup, backup.go); and the pprof listener on its
// own address (pprof.go).
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
)

// MinAdminTokenLen is the shortest admin token accepted: a token is the
// only thing between the Internet and the library's writes.
const MinAdminTokenLen = 16

// CheckAdminToken reports why token cannot be the admin token; "" (no
// token, a read-only server) is fine.
func CheckAdminToken(token string) error {
	if token == "" {
		return nil
	}
	if len(token) < MinAdminTokenLen {
		return fmt.Errorf("the admin token must be at least %d characters, got %d", MinAdminTokenLen, len(token))
	}
	if strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("the admin token must not contain spaces or control characters")
	}
	return nil
}

// Auth identifies the sender of a request by its bearer token: the
// bootstrap admin token the server was started with (--admin-token),
// compared in constant time by its hash, or an API token of the store
// (incidentlib.TokenReader). Its WriteGuard refuses, before any resolver
// runs, an operation the request's role is not enough for.
type Auth struct {
	sum    [sha256.Size]byte // of the bootstrap token; zero when there is none
	set    bool
	tokens incidentlib.TokenReader // nil: only the bootstrap token
}

// NewAuth makes the check of the bootstrap admin token ("" for none) and
// of the API tokens in tokens (nil for none). It returns CheckAdminToken's
// error for a token that cannot be one.
func NewAuth(token string, tokens incidentlib.TokenReader) (*Auth, error) {
	if err := CheckAdminToken(token); err != nil {
		return nil, err
	}
	a := &Auth{tokens: tokens}
	if token != "" {
		a.sum, a.set = sha256.Sum256([]byte(token)), true
	}
	return a, nil
}

// Identify returns the identity of a request's Authorization header: ok is
// false for a request without one (an anonymous reader). A header that
// carries no valid token (another scheme, a token that is unknown, revoked
// or expired) is EUNAUTHENTICATED, whatever the request asks for: a bad
// token is never read as anonymous. Identify writes nothing.
func (a *Auth) Identify(ctx context.Context, header string) (id incidentlib.Identity, ok bool, err error) {
	if header == "" {
		return incidentlib.Identity{}, false, nil
	}
	scheme, cred, found := strings.Cut(header, " ")
	cred = strings.TrimSpace(cred)
	if !found || !strings.EqualFold(scheme, "Bearer") || cred == "" {
		return incidentlib.Identity{}, false, incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "the Authorization header must be Bearer <token>")
	}
	sum := sha256.Sum256([]byte(cred))
	if a.set && subtle.ConstantTimeCompare(sum[:], a.sum[:]) == 1 {
		return incidentlib.BootstrapAdmin, true, nil
	}
	if a.tokens == nil {
		return incidentlib.Identity{}, false, incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "the bearer token is not a token of this library")
	}
	id, err = a.tokens.Authenticate(ctx, cred)
	if err != nil {
		return incidentlib.Identity{}, false, err
	}
	return id, true, nil
}

// Authenticate is Identify over a request: the request with its identity
// in its context (incidentlib.WithIdentity), or the refusal.
func (a *Auth) Authenticate(r *http.Request) (*http.Request, error) {
	id, ok, err := a.Identify(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	if !ok {
		return r, nil
	}
	return r.WithContext(incidentlib.WithIdentity(r.Context(), id)), nil
}

// refusal is the error of a request whose identity (ok: it has one) lacks
// the role need for what.
func refusal(id incidentlib.Identity, ok bool, need incidentlib.Role, what string) error {
	if !ok {
		return incidentlib.Errorf(incidentlib.EUNAUTHENTICATED,
			"%s needs the header Authorization: Bearer <token>, a token with the role %s or more (incidentlib token add)", what, need)
	}
	return incidentlib.Errorf(incidentlib.EFORBIDDEN, "%s needs the role %s or more; the token %q has the role %s", what, need, id.Name, id.Role)
}

// writeGuard lets an operation run only when the request's role is enough
// for every field it selects at its top (graph.RequiredRole). It refuses
// before any resolver runs, so a refused request reads and writes
// nothing, and grants an allowed mutation the right to write through the
// library's one write side (graph.WithWriter).
type writeGuard struct {
	writer  incidentlib.Writer
	present graphql.ErrorPresenterFunc
}

func (writeGuard) ExtensionName() string                   { return "RoleGuard" }
func (writeGuard) Validate(graphql.ExecutableSchema) error { return nil }

func (g writeGuard) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil {
		return next(ctx)
	}
	need, what := graph.RequiredRole(oc)
	id, ok := incidentlib.IdentityFrom(ctx)
	if !id.Role.Allows(need) {
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{g.present(ctx, refusal(id, ok, need, what))}})
	}
	if oc.Operation.Operation == ast.Mutation {
		ctx = graph.WithWriter(ctx, g.writer)
	}
	return next(ctx)
}

// WriteGuard is the gqlgen extension that lets an operation run only with
// a role enough for it, granting a mutation writer; present makes the
// refusal's GraphQL error. The request's identity comes from Authenticate,
// which the edge calls first.
func (a *Auth) WriteGuard(writer incidentlib.Writer, present graphql.ErrorPresenterFunc) graphql.HandlerExtension {
	return writeGuard{writer: writer, present: present}
}

// Require answers 401 or 403 unless the request carries a token with the
// role need; what names what needs it, in the answer.
func (a *Auth) Require(w http.ResponseWriter, r *http.Request, need incidentlib.Role, what string) bool {
	id, ok, err := a.Identify(r.Context(), r.Header.Get("Authorization"))
	if err == nil && id.Role.Allows(need) {
		return true
	}
	if err == nil {
		err = refusal(id, ok, need, what)
	}
	status := http.StatusForbidden
	if incidentlib.ErrorCode(err) == incidentlib.EUNAUTHENTICATED {
		status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", `Bearer realm="incidentlib"`)
	}
	http.Error(w, incidentlib.ErrorMessage(err), status)
	return false
}
