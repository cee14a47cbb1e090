package gqledge

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// origins is the CORS allow-list: exact origins (scheme://host[:port]),
// or any origin when it holds "*". Empty: no cross-origin access.
type origins struct {
	any   bool
	exact map[string]bool
}

// parseOrigins checks an allow-list: each entry is "*" or an origin such
// as https://example.org or http://localhost:3000, without a path.
func parseOrigins(list []string) (origins, error) {
	o := origins{exact: map[string]bool{}}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s == "*" {
			o.any = true
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return origins{}, fmt.Errorf("CORS origin %q is not an origin such as https://example.org", s)
		}
		o.exact[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	return o, nil
}

// ValidateCORSOrigins checks a CORS allow-list as Config.CORSOrigins
// takes it.
func ValidateCORSOrigins(list []string) error {
	_, err := parseOrigins(list)
	return err
}

func (o origins) allows(origin string) bool {
	if origin == "" {
		return false
	}
	return o.any || o.exact[strings.ToLower(origin)]
}

// corsPaths are the paths a browser may call across origins: GraphQL,
// its schema, and the MCP tools (server/mcp.go), whose queries are
// GraphQL's.
var corsPaths = map[string]bool{"/graphql": true, "/schema.graphql": true, "/mcp": true}

// The headers a browser may send and read across origins.
const (
	corsAllowHeaders  = "Accept, Accept-Language, Authorization, Content-Type, Idempotency-Key, Mcp-Protocol-Version, Traceparent, Tracestate, X-Request-Id"
	corsExposeHeaders = "Retry-After, X-Request-Id, " + StaleHeader
	corsMaxAge        = "600"
)

// cors answers preflight requests and marks the responses of allowed
// origins, on corsPaths. Credentials (cookies) are never
// allowed: the API has none. A preflight from an origin not on the list
// gets 403.
func (o origins) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corsPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		w.Header().Add("Vary", "Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !o.allows(origin) {
			if preflight {
				http.Error(w, "origin not allowed", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if o.any {
			w.Header().Set("Access-Control-Allow-Origin", "*")
		} else {
			w.Header().Set("Access-Control-Allow-Origin", origin)
		}
		if preflight {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
			w.Header().Set("Access-Control-Allow-Headers", corsAllowHeaders)
			w.Header().Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}
