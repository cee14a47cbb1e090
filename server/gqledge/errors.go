package gqledge

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
)

// PresentError is the error presenter of every GraphQL error the server
// answers: presentError maps the codes; an internal error also carries
// the request id (its log line has it too), so that a report can be
// matched with the log. In prod mode no message suggests field, argument
// or type names.
func (s *Edge) PresentError(ctx context.Context, err error) *gqlerror.Error {
	if errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// The client went away: nobody reads this, and it is no internal
		// error to log.
		out := graphql.DefaultErrorPresenter(ctx, err)
		out.Message = "the request was canceled"
		out.Extensions = map[string]any{"code": CodeCanceled}
		return out
	}
	out := s.presentError(ctx, err)
	if out.Extensions == nil {
		out.Extensions = map[string]any{}
	}
	code, _ := out.Extensions["code"].(string)
	if incidentlib.IsInternal(code) {
		out.Extensions["requestId"] = RequestID(ctx)
	}
	var appErr *incidentlib.Error
	if st, ok := incidentlib.StatusOf(code); ok && st.Request && errors.As(err, &appErr) {
		// A code that refuses the whole request takes its status from the
		// one table: the role guard's refusals (401 asks for a token, 403
		// says the token's role is not enough), a full disk (503 with
		// Retry-After: nothing was written), a cluster write not
		// acknowledged in time (503: it may still apply, and a retry with
		// the same Idempotency-Key applies at most once).
		if rp := replyFrom(ctx); rp != nil {
			rp.status = st.HTTP
			if code == incidentlib.EUNAUTHENTICATED {
				rp.header.Set("WWW-Authenticate", WWWAuthenticate)
			}
			if code == incidentlib.ESTORAGEFULL {
				rp.header.Set("Retry-After", strconv.Itoa(storageFullRetryAfter))
			}
		}
	}
	if code == incidentlib.ESTORAGEFULL {
		out.Extensions["retryAfter"] = storageFullRetryAfter
	}
	if s.prod {
		out.Message = stripSuggestions(out.Message)
	}
	return out
}

// WWWAuthenticate is the challenge of every 401 (the subscription
// transports' too).
const WWWAuthenticate = `Bearer realm="incidentlib"`

// storageFullRetryAfter is the Retry-After, in seconds, of a write refused
// for a full disk (STORAGE_FULL).
const storageFullRetryAfter = 30

// stripSuggestions cuts a "Did you mean ...?" suggestion off a message: the
// validator's rules without suggestions cover the known cases, this any
// other.
func stripSuggestions(msg string) string {
	if i := strings.Index(msg, " Did you mean"); i >= 0 {
		return msg[:i]
	}
	return msg
}

// presentError maps domain errors to GraphQL errors with extensions.code,
// in this one place. Internal errors are logged and shown as "internal
// error" only.
func (s *Edge) presentError(ctx context.Context, err error) *gqlerror.Error {
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) && gqlErr.Err == nil {
		return gqlErr // parse and validation errors of gqlgen itself
	}
	out := graphql.DefaultErrorPresenter(ctx, err)
	var appErr *incidentlib.Error
	if errors.As(err, &appErr) {
		out.Message = appErr.Message
		if out.Extensions == nil {
			out.Extensions = map[string]any{}
		}
		out.Extensions["code"] = appErr.Code
		if len(appErr.Field) > 0 {
			out.Extensions["field"] = appErr.Field
		}
		return out
	}
	if errors.Is(err, context.DeadlineExceeded) {
		out.Message = "the request ran out of time"
		out.Extensions = map[string]any{"code": incidentlib.ETIMEOUT}
		return out
	}
	s.logger.ErrorContext(ctx, "internal error", "err", err, "path", out.Path.String())
	out.Message = "internal error"
	out.Extensions = map[string]any{"code": incidentlib.EINTERNAL}
	return out
}
