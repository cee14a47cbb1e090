package incidentlib

import (
	"errors"
	"fmt"
)

// Error codes. They are mapped to GraphQL extensions.code and HTTP statuses
// in one place at the edge (graph.ErrorPresenter).
const (
	ECONFLICT = "CONFLICT"
	EINTERNAL = "INTERNAL"
	EINVALID  = "INVALID"
	ENOTFOUND = "NOT_FOUND"
	// EUNAUTHENTICATED: the request's bearer token is missing where one is
	// needed, or is no token, revoked or expired: HTTP 401 with
	// WWW-Authenticate: Bearer.
	EUNAUTHENTICATED = "UNAUTHENTICATED"
	// EFORBIDDEN: the request's role is not enough for the operation:
	// HTTP 403.
	EFORBIDDEN           = "FORBIDDEN"
	EBADCURSOR           = "BAD_CURSOR"
	EBADQUERY            = "BAD_QUERY"
	EBADREQUEST          = "BAD_REQUEST"
	ETIMEOUT             = "TIMEOUT"
	EUNAVAILABLE         = "UNAVAILABLE"
	EUPSTREAMUNAVAILABLE = "UPSTREAM_UNAVAILABLE"
	EREADONLY            = "READ_ONLY"
	// ESTORECORRUPT: the store's file has a damaged page. A client sees an
	// internal error (message "internal error", a request id, HTTP 500);
	// the store logs the file and the page once, /readyz answers 503.
	ESTORECORRUPT = "STORE_CORRUPT"
	// ESTORAGEFULL: a write failed for want of disk space (ENOSPC, EFBIG,
	// EDQUOT) and wrote nothing: HTTP 503 with Retry-After.
	ESTORAGEFULL = "STORAGE_FULL"
	// ESEQUENCECOMPACTED: a change-log position older than the retained
	// log (history compaction removed it): HTTP 410. A replica
	// re-bootstraps from a snapshot; a subscriber starts afresh.
	ESEQUENCECOMPACTED = "SEQUENCE_COMPACTED"
	// ESEQUENCEAHEAD: a change-log position above the store's head (for
	// example a store restored from an older backup): HTTP 400.
	ESEQUENCEAHEAD = "SEQUENCE_AHEAD"
	// ESUBSCRIPTIONLIMIT: a client or the server holds as many
	// subscriptions as it may: HTTP 429 (WebSocket close code 4429).
	ESUBSCRIPTIONLIMIT = "SUBSCRIPTION_LIMIT"
	// ESELFREVIEW: a reviewer may not approve a version they wrote.
	ESELFREVIEW = "SELF_REVIEW"
	// EINVALIDSTATE: a review transition from a state that does not allow it.
	EINVALIDSTATE = "INVALID_STATE"
	// EOUTCOMEUNKNOWN: a write was sent to the cluster's log but not
	// acknowledged in time: it may still apply (HTTP 503). A retry with
	// the same idempotency key applies at most once.
	EOUTCOMEUNKNOWN = "OUTCOME_UNKNOWN"
)

// IsInternal reports whether an error code is shown to a client as an
// internal error, with a request id and no detail.
func IsInternal(code string) bool { return code == EINTERNAL || code == ESTORECORRUPT }

// Error is the one error type of the application. Anything that is not an
// *Error is internal and its message is never shown to a client.
type Error struct {
	// Code is machine readable, one of the E* constants.
	Code string
	// Message is human readable and safe to show to a client.
	Message string
	// Field is the path of the input field the error is about, if any
	// (for example ["records", "3", "date"]).
	Field []string
}

// Error implements the error interface. Not used by the application otherwise.
func (e *Error) Error() string {
	if len(e.Field) > 0 {
		return fmt.Sprintf("incidentlib error: code=%s field=%v message=%s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("incidentlib error: code=%s message=%s", e.Code, e.Message)
}

// ErrorCode unwraps an application error and returns its code.
// Non-application errors always return EINTERNAL.
func ErrorCode(err error) string { return errorOf(err).Code }

// ErrorMessage unwraps an application error and returns its message.
// Non-application errors always return "internal error".
func ErrorMessage(err error) string { return errorOf(err).Message }

// ErrorField returns the field path of an application error, if any.
func ErrorField(err error) []string { return errorOf(err).Field }

// noError and internalError are what errorOf returns for nil and for an
// error that is not an application error. They are never changed.
var noError, internalError = &Error{}, &Error{Code: EINTERNAL, Message: "internal error"}

// errorOf unwraps err: its application error, noError for nil, or
// internalError.
func errorOf(err error) *Error {
	var e *Error
	if err == nil {
		return noError
	} else if errors.As(err, &e) {
		return e
	}
	return internalError
}

// Errorf is a helper function to return an application error.
func Errorf(code string, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an application error about one input field.
func FieldErrorf(code string, field []string, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Errors is a list of application errors, returned by validation that finds
// more than one problem. Its code is the code of the first error.
type Errors []*Error

func (es Errors) Error() string {
	if len(es) == 0 {
		return "no errors"
	}
	s := es[0].Error()
	if len(es) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(es)-1)
	}
	return s
}

// As lets errors.As find the first *Error in the list.
func (es Errors) As(target any) bool {
	if t, ok := target.(**Error); ok && len(es) > 0 {
		*t = es[0]
		return true
	}
	return false
}

// ErrorList flattens err into the list of application errors it holds.
func ErrorList(err error) []*Error {
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}
