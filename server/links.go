package server

import (
	"net/http"

	"github.com/incidentlib/incidentlib/server/restapi"
)

// incidentURL is the resolver's IncidentURL (citations): restapi's, the
// one rule of the library's absolute links, under publicURL or the
// request's own scheme and host, as the Atom feed's.
func incidentURL(publicURL string) func(r *http.Request, id string) string {
	return func(r *http.Request, id string) string { return restapi.IncidentURL(restapi.BaseURL(publicURL, r), id) }
}
