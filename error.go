package incidentlib

import (
	"errors"
	"fmt"
	"slices"
)

// Error codes. Each is GraphQL's extensions.code as it is, and its HTTP
// status and WebSocket close code are in one table, codeStatuses below,
// read by every transport (REST, GraphQL over HTTP, SSE, WebSocket).
// Each code's comment says its HTTP status ("HTTP nnn"); a test holds the
// comments and the table to each other.
const (
	// ECONFLICT: the write's expected version is not the current one, or
	// the thing exists already: HTTP 409.
	ECONFLICT = "CONFLICT"
	// EINTERNAL: a fault of the server, shown as "internal error" with a
	// request id: HTTP 500.
	EINTERNAL = "INTERNAL"
	// EINVALID: an input the rules refuse: HTTP 400.
	EINVALID = "INVALID"
	// ENOTFOUND: HTTP 404.
	ENOTFOUND = "NOT_FOUND"
	// EUNAUTHENTICATED: the request's bearer token is missing where one is
	// needed, or is no token, revoked or expired: HTTP 401 with
	// WWW-Authenticate: Bearer.
	EUNAUTHENTICATED = "UNAUTHENTICATED"
	// EFORBIDDEN: the request's role is not enough for the operation:
	// HTTP 403.
	EFORBIDDEN = "FORBIDDEN"
	// EBADCURSOR: a page cursor that is not one of ours: HTTP 400.
	EBADCURSOR = "BAD_CURSOR"
	// EBADQUERY: a search query that does not parse: HTTP 400.
	EBADQUERY = "BAD_QUERY"
	// EBADREQUEST: a request that does not decode: HTTP 400.
	EBADREQUEST = "BAD_REQUEST"
	// ETIMEOUT: the request ran out of time: HTTP 504.
	ETIMEOUT = "TIMEOUT"
	// EUNAVAILABLE: the server cannot answer now (starting, stopping, a
	// cluster without quorum): HTTP 503.
	EUNAVAILABLE = "UNAVAILABLE"
	// EUPSTREAMUNAVAILABLE: a source this server reads from did not
	// answer: HTTP 503.
	EUPSTREAMUNAVAILABLE = "UPSTREAM_UNAVAILABLE"
	// EREADONLY: a write sent to a replica (or without a write token's
	// capability), naming the primary: HTTP 403.
	EREADONLY = "READ_ONLY"
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
	// ESELFREVIEW: a reviewer may not approve content they wrote: HTTP 403.
	ESELFREVIEW = "SELF_REVIEW"
	// EINVALIDSTATE: a review transition from a state that does not allow
	// it: HTTP 409.
	EINVALIDSTATE = "INVALID_STATE"
	// EOUTCOMEUNKNOWN: a write was sent to the cluster's log but not
	// acknowledged in time: it may still apply (HTTP 503). A retry with
	// the same idempotency key applies at most once.
	EOUTCOMEUNKNOWN = "OUTCOME_UNKNOWN"
)

// CodeStatus is how every transport answers an error code: one entry of
// the one table, codeStatuses.
type CodeStatus struct {
	// HTTP is the status of a REST answer with the code, of a stream
	// (SSE, or the upgrade of a WebSocket) refused with it, and of a
	// GraphQL-over-HTTP response when Request is set.
	HTTP int
	// Request: a GraphQL response carrying the code (from the domain)
	// takes HTTP as its status, since the code refuses the whole request
	// (its sender, or a write that did not happen). Without it a GraphQL
	// response is 200: the error is a field's, beside the other fields'
	// data, as GraphQL over HTTP asks.
	Request bool
	// Close is the WebSocket close code when a subscribe is refused with
	// the code; 0: the operation gets an error message and the connection
	// stays.
	Close int
}

// codeStatuses is the one table from error code to HTTP status and
// WebSocket close code. Every E* constant has an entry (a test parses this
// file and checks it).
var codeStatuses = map[string]CodeStatus{
	ECONFLICT:            {HTTP: 409},
	EINTERNAL:            {HTTP: 500},
	EINVALID:             {HTTP: 400},
	ENOTFOUND:            {HTTP: 404},
	EUNAUTHENTICATED:     {HTTP: 401, Request: true},
	EFORBIDDEN:           {HTTP: 403, Request: true},
	EBADCURSOR:           {HTTP: 400},
	EBADQUERY:            {HTTP: 400},
	EBADREQUEST:          {HTTP: 400},
	ETIMEOUT:             {HTTP: 504},
	EUNAVAILABLE:         {HTTP: 503},
	EUPSTREAMUNAVAILABLE: {HTTP: 503},
	EREADONLY:            {HTTP: 403},
	ESTORECORRUPT:        {HTTP: 500},
	ESTORAGEFULL:         {HTTP: 503, Request: true},
	ESEQUENCECOMPACTED:   {HTTP: 410},
	ESEQUENCEAHEAD:       {HTTP: 400},
	ESUBSCRIPTIONLIMIT:   {HTTP: 429, Close: 4429},
	ESELFREVIEW:          {HTTP: 403},
	EINVALIDSTATE:        {HTTP: 409},
	EOUTCOMEUNKNOWN:      {HTTP: 503, Request: true},
}

// StatusOf is the entry of code in the one table; ok is false for a code
// that is not an application's (an edge's own code, such as a limit's,
// whose status is decided where it is refused).
func StatusOf(code string) (st CodeStatus, ok bool) {
	st, ok = codeStatuses[code]
	return st, ok
}

// Codes lists the codes of the table, sorted: what a test of a transport
// walks.
func Codes() []string {
	out := make([]string, 0, len(codeStatuses))
	for c := range codeStatuses {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// HTTPStatus is the HTTP status of code: the table's, or 500 for a code
// that is not in it.
func HTTPStatus(code string) int {
	if st, ok := codeStatuses[code]; ok {
		return st.HTTP
	}
	return 500
}

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
