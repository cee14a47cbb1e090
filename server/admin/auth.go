// Package admin holds what only the library's operator may do, and the
// checks that keep everyone else out: the admin token (auth.go), which
// mutations and backups need; the read-only guard of a replica
// (replica.go); backups of the store (GET /admin/backup, backup.go); and
// the pprof listener on its own address (pprof.go).
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

// Auth checks the admin token of a request in constant time.
type Auth struct {
	sum [sha256.Size]byte // of the token; zero when there is none
	set bool
}

// NewAuth makes the check of token ("" for none: a read-only server).
// It returns CheckAdminToken's error for a token that cannot be one.
func NewAuth(token string) (*Auth, error) {
	if err := CheckAdminToken(token); err != nil {
		return nil, err
	}
	if token == "" {
		return &Auth{}, nil
	}
	return &Auth{sum: sha256.Sum256([]byte(token)), set: true}, nil
}

// check returns nil if the Authorization header carries the admin token,
// else EREADONLY (no token configured) or EUNAUTHORIZED. The token is
// compared by its hash, so neither its bytes nor its length leak through
// timing.
func (a *Auth) check(header, what string) error {
	if !a.set {
		return incidentlib.Errorf(incidentlib.EREADONLY,
			"this server is read-only: %s need the server to be started with --admin-token (or INCIDENTLIB_ADMIN_TOKEN)", what)
	}
	if header == "" {
		return incidentlib.Errorf(incidentlib.EUNAUTHORIZED, "%s need the header Authorization: Bearer <admin token>", what)
	}
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return incidentlib.Errorf(incidentlib.EUNAUTHORIZED, "the Authorization header must be Bearer <admin token>")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(cred)))
	if subtle.ConstantTimeCompare(sum[:], a.sum[:]) != 1 {
		return incidentlib.Errorf(incidentlib.EUNAUTHORIZED, "the bearer token is not the admin token")
	}
	return nil
}

// writeGuard lets a mutation run only with the admin token. It refuses
// before any resolver runs (so a refused request changes nothing) and
// otherwise grants the operation the right to write (graph.WithWriter).
type writeGuard struct {
	auth    *Auth
	writer  incidentlib.IncidentWriter
	present graphql.ErrorPresenterFunc
}

func (writeGuard) ExtensionName() string                   { return "AdminWrites" }
func (writeGuard) Validate(graphql.ExecutableSchema) error { return nil }

func (g writeGuard) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Mutation {
		return next(ctx)
	}
	if err := g.auth.check(oc.Headers.Get("Authorization"), "mutations"); err != nil {
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{g.present(ctx, err)}})
	}
	return next(graph.WithWriter(ctx, g.writer))
}

// WriteGuard is the gqlgen extension that lets a mutation run only with
// the admin token, granting it writer; present makes the refusal's
// GraphQL error.
func (a *Auth) WriteGuard(writer incidentlib.IncidentWriter, present graphql.ErrorPresenterFunc) graphql.HandlerExtension {
	return writeGuard{auth: a, writer: writer, present: present}
}

// Require answers 401 or 403 unless the request carries the admin token;
// what names what needs it, in the answer.
func (a *Auth) Require(w http.ResponseWriter, r *http.Request, what string) bool {
	err := a.check(r.Header.Get("Authorization"), what)
	if err == nil {
		return true
	}
	status := http.StatusForbidden
	if incidentlib.ErrorCode(err) == incidentlib.EUNAUTHORIZED {
		status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", `Bearer realm="incidentlib"`)
	}
	http.Error(w, incidentlib.ErrorMessage(err), status)
	return false
}
