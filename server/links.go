package server

import (
	"net/http"

	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/server/restapi"
)

// withIncidentURLs gives the GraphQL requests the incidents' addresses
// that citations name (graph.WithIncidentURLs): restapi's, the one rule of
// the library's absolute links, under publicURL or the request's own
// scheme and host, as the Atom feed's.
func withIncidentURLs(publicURL string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := restapi.BaseURL(publicURL, r)
		next.ServeHTTP(w, r.WithContext(graph.WithIncidentURLs(r.Context(), func(id string) string { return restapi.IncidentURL(base, id) })))
	})
}
