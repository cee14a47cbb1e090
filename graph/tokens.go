package graph

import (
	"context"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// Helpers of the token resolvers (tokens.resolvers.go, which gqlgen
// rewrites) and of the author every write records.

// author returns the identity of the request that writes: the server's
// role guard (server/admin) verified it before any resolver ran. A
// request without one (a test's executor without the guard) may not
// write.
func author(ctx context.Context, need incidentlib.Role) (incidentlib.Identity, error) {
	id, ok := incidentlib.IdentityFrom(ctx)
	if !ok || id.Name == "" {
		return id, incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "this request carries no token")
	}
	if !id.Role.Allows(need) {
		return id, incidentlib.Errorf(incidentlib.EFORBIDDEN, "this needs the role %s or more; the token %q has the role %s", need, id.Name, id.Role)
	}
	return id, nil
}

// tokenService returns the tokens' reads, once the request is an admin's.
func (r *Resolver) tokenService(ctx context.Context) (incidentlib.TokenReader, error) {
	return guarded(ctx, incidentlib.RoleAdmin, r.TokenService, "tokens")
}

// tokenIssuer returns the request's writer for the token writes, once
// the request is an admin's.
func tokenIssuer(ctx context.Context) (incidentlib.TokenIssuer, error) {
	w, _, err := writerAs(ctx, incidentlib.RoleAdmin)
	return w, err
}

// guarded returns svc once the request holds the role need, or
// EUNAVAILABLE ("this server keeps no " + what) when the server was
// composed without svc (a nil interface).
func guarded[S any](ctx context.Context, need incidentlib.Role, svc S, what string) (S, error) {
	var none S
	if _, err := author(ctx, need); err != nil {
		return none, err
	}
	if any(svc) == nil {
		return none, incidentlib.Errorf(incidentlib.EUNAVAILABLE, "this server keeps no %s", what)
	}
	return svc, nil
}

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

// apiToken is the GraphQL view of a token.
func apiToken(t *incidentlib.TokenInfo, now time.Time) *model.APIToken {
	return &model.APIToken{
		Name: t.Name, Role: t.Role, CreatedAt: t.Created.UTC().Format(time.RFC3339),
		ExpiresAt: optTime(t.Expires), LastUsedAt: optTime(t.LastUsed), RevokedAt: optTime(t.Revoked), Active: t.Active(now),
	}
}

// ParseExpiry reads an expiry: RFC 3339, or YYYY-MM-DD for midnight UTC
// at the start of that day.
func ParseExpiry(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"expiresAt"}, "expiresAt is RFC 3339 (2027-01-31T00:00:00Z) or YYYY-MM-DD, not %q", s)
}
