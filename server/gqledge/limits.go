package gqledge

import (
	"errors"
	"fmt"
	"time"

	"github.com/99designs/gqlgen/graphql/errcode"

	"github.com/incidentlib/incidentlib"
)

// Codes of the requests the server refuses before it runs them, in
// extensions.code. TIMEOUT (incidentlib.ETIMEOUT) is the code of a request
// that ran out of time.
const (
	CodeCostLimit            = "COST_LIMIT"
	CodeDepthLimit           = "DEPTH_LIMIT"
	CodeAliasLimit           = "ALIAS_LIMIT"
	CodeRepeatLimit          = "REPEAT_LIMIT"
	CodeTokenLimit           = "TOKEN_LIMIT"
	CodeBodyTooLarge         = "BODY_TOO_LARGE"
	CodeBatchLimit           = "BATCH_LIMIT"
	CodeRateLimited          = "RATE_LIMITED"
	CodeBadRequest           = incidentlib.EBADREQUEST
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeNotAcceptable        = "NOT_ACCEPTABLE"
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeIntrospectionOff     = "INTROSPECTION_DISABLED"
	// CodeCanceled: the client went away before the answer.
	CodeCanceled = "CANCELED"
)

func init() {
	// The GraphQL-level refusals are request errors, like parse and
	// validation errors: 400 with application/graphql-response+json.
	for _, c := range []string{CodeCostLimit, CodeDepthLimit, CodeAliasLimit, CodeRepeatLimit, CodeTokenLimit, CodeRateLimited, CodeMethodNotAllowed, CodeIntrospectionOff} {
		errcode.RegisterErrorType(c, errcode.KindProtocol)
	}
}

// Limits bound what one HTTP request may ask of the server. A zero field
// takes its default; a negative one is refused.
type Limits struct {
	// MaxCost is the largest cost (gqlgen complexity, see graph.Complexity)
	// of one request; a batch shares it among its operations.
	MaxCost int
	// MaxDepth is the deepest nesting of fields, fragments expanded.
	// Introspection (__schema, __type) is bounded by the validator's own
	// introspection depth rule instead.
	MaxDepth int
	// MaxAliases is how many aliased fields a document may hold, fragments
	// expanded.
	MaxAliases int
	// MaxTokens is the parser's token limit for one document.
	MaxTokens int
	// MaxBody is the largest request body, in bytes.
	MaxBody int64
	// MaxBatch is how many operations one POST may carry as a JSON array.
	MaxBatch int
	// RequestTimeout is the deadline of each request, from its arrival;
	// resolvers, dataloaders and the store see it.
	RequestTimeout time.Duration
}

// The default limits: safe for a public endpoint, and every query of the
// README and the tests passes them (the list page of the N+1 proof at
// first: 100 costs 4,601; the README's list page at first: 20 costs 5,341).
const (
	DefaultMaxCost        = 20_000
	DefaultMaxDepth       = 12
	DefaultMaxAliases     = 30
	DefaultMaxTokens      = 2_000
	DefaultMaxBody        = 1 << 20
	DefaultMaxBatch       = 10
	DefaultRequestTimeout = 10 * time.Second
)

// MaxRepeats is how many times one response name may be selected in one
// selection set, fragments merged into it. It is fixed, not configured:
// the validator compares every pair of fields under one response name, so
// a thousand repeats of one field, within any token limit, take it seconds;
// a real query repeats a name a few times at most.
const MaxRepeats = 16

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxCost: DefaultMaxCost, MaxDepth: DefaultMaxDepth, MaxAliases: DefaultMaxAliases,
		MaxTokens: DefaultMaxTokens, MaxBody: DefaultMaxBody, MaxBatch: DefaultMaxBatch,
		RequestTimeout: DefaultRequestTimeout,
	}
}

func (l *Limits) withDefaults() error {
	d := DefaultLimits()
	ints := []struct {
		name   string
		p      *int
		def    int
		suffix string
	}{
		{"cost", &l.MaxCost, d.MaxCost, ""}, {"depth", &l.MaxDepth, d.MaxDepth, ""},
		{"aliases", &l.MaxAliases, d.MaxAliases, ""}, {"tokens", &l.MaxTokens, d.MaxTokens, ""},
		{"batch", &l.MaxBatch, d.MaxBatch, ""},
	}
	for _, f := range ints {
		if *f.p < 0 {
			return fmt.Errorf("the %s limit must not be negative, got %d", f.name, *f.p)
		}
		if *f.p == 0 {
			*f.p = f.def
		}
	}
	if l.MaxBody < 0 || l.RequestTimeout < 0 {
		return errors.New("the body limit and the request timeout must not be negative")
	}
	if l.MaxBody == 0 {
		l.MaxBody = d.MaxBody
	}
	if l.RequestTimeout == 0 {
		l.RequestTimeout = d.RequestTimeout
	}
	return nil
}
