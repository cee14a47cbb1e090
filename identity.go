package incidentlib

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"
)

// Role is what a request may do. Roles are cumulative: each allows what
// the ones below it allow. A reader sends no token; the other roles come
// with an API token (TokenService) or, for RoleAdmin, the bootstrap admin
// token the server was started with.
type Role int

// Roles, from least to most.
const (
	// RoleReader: queries, subscriptions and REST reads of current records.
	RoleReader Role = iota
	// RoleEditor: also creates, changes, deletes and imports incidents.
	RoleEditor
	// RoleReviewer: also reviews incidents.
	RoleReviewer
	// RoleAdmin: also manages tokens and takes backups.
	RoleAdmin
)

// String is the role's name: reader, editor, reviewer or admin.
func (r Role) String() string {
	switch r {
	case RoleReader:
		return "reader"
	case RoleEditor:
		return "editor"
	case RoleReviewer:
		return "reviewer"
	case RoleAdmin:
		return "admin"
	}
	return "unknown"
}

// Allows reports whether r may do what needs the role need.
func (r Role) Allows(need Role) bool { return r >= need }

// ParseRole reads a role a token may carry: editor, reviewer or admin
// (case-insensitive). Returns EINVALID for anything else, reader
// included: a reader needs no token.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(s) {
	case "editor":
		return RoleEditor, nil
	case "reviewer":
		return RoleReviewer, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleReader, Errorf(EINVALID, "a token's role is editor, reviewer or admin, not %q", s)
}

// Identity is who sends a request: the name of its token and its role.
// The zero value is an anonymous reader.
type Identity struct {
	// Name is the token's name, and the author every write of the request
	// records; "" for a reader.
	Name string
	Role Role
}

// BootstrapAdmin is the identity of the admin token the server was started
// with (serve --admin-token): the author its writes record is "admin".
var BootstrapAdmin = Identity{Name: "admin", Role: RoleAdmin}

// WithIdentity returns ctx carrying the identity the server verified for
// the request.
func WithIdentity(ctx context.Context, id Identity) context.Context { return withValue(ctx, id) }

// IdentityFrom returns the identity ctx carries, and whether it carries
// one. A request without a token carries none: an anonymous reader.
func IdentityFrom(ctx context.Context) (Identity, bool) { return valueFrom[Identity](ctx) }

// ctxKey is the context key of the value of type T a context carries
// (withValue): one key per type, which no other package can make.
type ctxKey[T any] struct{}

func withValue[T any](ctx context.Context, v T) context.Context {
	return context.WithValue(ctx, ctxKey[T]{}, v)
}

func valueFrom[T any](ctx context.Context) (T, bool) {
	v, ok := ctx.Value(ctxKey[T]{}).(T)
	return v, ok
}

// TokenInfo describes an API token; never its secret.
type TokenInfo struct {
	// Name is unique among the tokens that are neither revoked nor
	// expired, and is the author of the writes made with the token. Names
	// are compared without case: no new token's name differs from another
	// token's (even a revoked one's) only in case, so that one person is
	// not two authors. Author names are public: review.writtenBy and
	// reviewedBy, the history's authors and IL-JSON show them to anyone.
	Name    string
	Role    Role
	Created time.Time
	// Expires is zero for a token that does not expire.
	Expires time.Time
	// LastUsed is the last request the token authenticated, to about a
	// minute (it is written at most once a minute); zero if never.
	LastUsed time.Time
	// Revoked is when the token was revoked; zero if it was not.
	Revoked time.Time
}

// Active reports whether the token authenticates at now: not revoked and
// not expired.
func (t *TokenInfo) Active(now time.Time) bool {
	return t.Revoked.IsZero() && (t.Expires.IsZero() || now.Before(t.Expires))
}

// TokenPrefix begins every API token: "il_" and 32 random bytes in
// unpadded base64url.
const TokenPrefix = "il_"

// MaxTokenNameLen is the longest token name.
const MaxTokenNameLen = 64

// ReservedAuthors are names the program itself writes as: no token may
// take one (compared without case, as token names are). Every Author*
// and *Author constant of the package is here; a test parses the package
// to hold it so. "gen" is the author of generated records (gen.WrittenBy).
var ReservedAuthors = []string{BootstrapAdmin.Name, AuthorImport, AuthorMigration, AuthorSeeds, ReleaseAuthor, "gen"}

// ValidTokenName says why name cannot name a token, or "" if it can:
// 1 to MaxTokenNameLen letters, digits, '.', '_', '-' or '@', starting
// with a letter or digit, and not one of ReservedAuthors.
func ValidTokenName(name string) string {
	if name == "" || len(name) > MaxTokenNameLen {
		return "a token name is 1 to 64 characters"
	}
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._-@", c)) {
			return "a token name is letters, digits, '.', '_', '-' and '@', starting with a letter or digit"
		}
	}
	for _, r := range ReservedAuthors {
		if strings.EqualFold(name, r) {
			return "the name " + r + " is reserved for the program's own writes"
		}
	}
	return ""
}

// TokenService keeps the API tokens: a token is shown once, when it is
// created, and kept only as a hash. Its writes (TokenIssuer) are part of
// the one write side (Writer); its reads (TokenReader) are the reads'.
type TokenService interface {
	TokenIssuer
	TokenReader
}

// TokenIssuer makes and revokes API tokens: the token writes of Writer.
type TokenIssuer interface {
	// CreateToken makes a new token for name with role, expiring at
	// expires (zero: never), and returns its secret, the only time it is
	// shown, with its description. A name held by a revoked or expired
	// token is reused (the old record is replaced). Returns EINVALID for a
	// bad name (ValidTokenName), a role that is not editor, reviewer or
	// admin, or an expiry in the past; ECONFLICT if an active token has
	// the name.
	CreateToken(ctx context.Context, name string, role Role, expires time.Time) (secret string, info *TokenInfo, err error)

	// RevokeToken revokes the token name at once: its next request is
	// refused. Returns ENOTFOUND if no token has the name, ECONFLICT if it
	// is already revoked.
	RevokeToken(ctx context.Context, name string) (*TokenInfo, error)
}

// TokenReader lists the API tokens and authenticates requests by them.
type TokenReader interface {
	// ListTokens returns every token, active, expired or revoked, sorted by
	// name; never a secret.
	ListTokens(ctx context.Context) ([]*TokenInfo, error)

	// Authenticate returns the identity of secret, compared in constant
	// time with every token's hash. It never writes: the time of use is
	// kept in memory and saved at most once a minute (node-local
	// bookkeeping: a cluster node keeps its own). Returns
	// EUNAUTHENTICATED for a secret that is no token, or whose token is
	// revoked or expired.
	Authenticate(ctx context.Context, secret string) (Identity, error)
}

// TokenWriter stores and revokes tokens by their hash: a cluster's log
// carries only a token's hash, never its secret (the node that received
// the request made the secret and tells it to its client alone). Under a
// log position (WithLogPosition) the times a write records and judges by
// (created, revoked, expiry) are the position's, not the store's clock.
type TokenWriter interface {
	// CreateTokenHash stores a token for name with role whose secret has
	// the SHA-256 hash; errors as CreateToken's.
	CreateTokenHash(ctx context.Context, name string, role Role, hash []byte, expires time.Time) (*TokenInfo, error)
	// RevokeToken is TokenService.RevokeToken.
	RevokeToken(ctx context.Context, name string) (*TokenInfo, error)
}

// NewTokenSecret returns a new token's secret (TokenPrefix and 32 random
// bytes) and its SHA-256 hash, the only form a store keeps.
func NewTokenSecret() (secret string, hash []byte, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, err
	}
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(secret))
	return secret, sum[:], nil
}

// ValidateNewToken checks a new token's name, role and expiry (after
// now); EINVALID naming the field.
func ValidateNewToken(name string, role Role, expires, now time.Time) error {
	if why := ValidTokenName(name); why != "" {
		return FieldErrorf(EINVALID, []string{"name"}, "%s", why)
	}
	if role < RoleEditor || role > RoleAdmin {
		return FieldErrorf(EINVALID, []string{"role"}, "a token's role is editor, reviewer or admin")
	}
	if !expires.IsZero() && !expires.After(now) {
		return FieldErrorf(EINVALID, []string{"expiresAt"}, "the expiry %s is not in the future", expires.UTC().Format(time.RFC3339))
	}
	return nil
}
