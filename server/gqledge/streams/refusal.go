package streams

import (
	"encoding/json"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"net/http"
)

// A stream refused with what a retry cannot change (a malformed `since`,
// SEQUENCE_AHEAD or SEQUENCE_COMPACTED, a bad token, a document that does
// not validate, a cost over the limit) is answered as graphql-sse's
// reference server answers a document that does not validate to a
// client that accepts text/event-stream: 200 and an event stream of one
// `next` event carrying {"errors": [...]} (each with extensions.code),
// then `complete`. The graphql-sse client takes every answer that is not
// 2xx for a network error, retries it (five times by default, about a
// minute with its backoff) and then reports only "Server responded with
// 400"; a stream hands the errors to the subscriber's `next` at once,
// after one request. A refusal that a later try can cure stays an HTTP
// status, which the client retries as it should: 429 (the rate limit,
// the subscription limit; with Retry-After) and 5xx (a server shutting
// down).

// sseRefuseOperation answers the refusal of an SSE request's operation
// (its token, its document, its arguments): as an event stream when a
// retry cannot change it, else as sseRefuse does.
func sseRefuseOperation(w http.ResponseWriter, rf *liveRefusal) {
	if rf.status >= 400 && rf.status < 500 && rf.status != http.StatusTooManyRequests {
		sseRefuseInStream(w, rf)
		return
	}
	sseRefuse(w, rf)
}

// sseRefuseInStream answers rf as an event stream: `next` with the
// errors, then `complete`. The refusal's headers (WWW-Authenticate of a
// bad token) are kept.
func sseRefuseInStream(w http.ResponseWriter, rf *liveRefusal) {
	h := w.Header()
	for k, vs := range rf.header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if rf.status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", gqledge.WWWAuthenticate)
	}
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	b, _ := json.Marshal(requestErrors{Errors: rf.errs})
	_, _ = w.Write([]byte("event: next\ndata: "))
	_, _ = w.Write(b) // JSON without newlines
	_, _ = w.Write([]byte("\n\nevent: complete\ndata: \n\n"))
}
