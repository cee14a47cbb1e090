package server

import (
	_ "embed"
	"net/http"
	"strconv"
)

// favicon is the site's icon. Browsers ask for /favicon.ico on every page
// load of the playground; a 404 there filled the request log and the
// metrics with misses.
//
//go:embed assets/favicon.ico
var favicon []byte

// serveFavicon answers GET /favicon.ico: the embedded icon, cacheable for a
// year (it changes only with the binary).
func serveFavicon(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "image/x-icon")
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("Content-Length", strconv.Itoa(len(favicon)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(favicon)
	}
}
