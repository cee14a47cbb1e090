package server

import (
	"net/http"

	"github.com/incidentlib/incidentlib/server/gqledge"
)

// StaleHeader is the response header that says a response was served
// while the server's reads may be behind the library (Config.Stale): a
// cluster node without a quorum. Its value is "true"; it is absent
// otherwise. It covers every response, REST API, exports, feeds and
// GraphQL alike (GraphQL responses also carry extensions.stale).
const StaleHeader = gqledge.StaleHeader

var staleValue = []string{"true"}

// markStale sets StaleHeader on every response while stale says so;
// without stale it is next itself. The header is set before next runs,
// so that every way a handler answers (a stored response replayed, a
// stream, an error) carries it; stored responses never hold it: the
// response cache keeps the headers a handler set on its own capture, and
// downloads keep only their Content-Type.
func markStale(stale func() bool, next http.Handler) http.Handler {
	if stale == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stale() {
			w.Header()[StaleHeader] = staleValue
		}
		next.ServeHTTP(w, r)
	})
}
