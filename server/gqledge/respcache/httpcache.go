package respcache

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// HTTP caching of GraphQL GET responses (queries by text or by persisted
// hash) and of downloads, so that browsers and CDNs can keep list and
// incident pages:
//
//   - ETag: "EPOCH-SEQ-KEY", from the store sequence the response was
//     computed at and the hash of its cache key (document, operation,
//     variables, language and the request headers that shape it). EPOCH is
//     random per process, so a restart (perhaps with another schema or
//     binary) never answers 304 for bytes it did not produce.
//   - If-None-Match matching the current ETag is answered 304 with no body;
//     the ETag is only ever compared against a response known to succeed
//     (from the response cache, or just computed), never guessed.
//   - Cache-Control: configurable (--cache-control, gqledge's
//     DefaultCacheControl by default); error responses to GET get
//     "no-store".
//   - Vary names every request header in the key.
//
// POST responses carry no ETag or Cache-Control: HTTP caches do not keep
// them, and a client that wants HTTP caching uses GET (with a persisted
// hash, the URL stays short).

// varyHeaders are the request headers a response depends on; they are part
// of the cache key.
const varyHeaders = "Accept, Accept-Language, Authorization, Origin"

// HTTPCaching writes the HTTP caching headers of one process's responses.
type HTTPCaching struct {
	epoch        string
	cacheControl string
}

// NewHTTPCaching draws the process's ETag prefix; cacheControl is the
// Cache-Control value of GET responses (already validated).
func NewHTTPCaching(cacheControl string) HTTPCaching {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return HTTPCaching{epoch: hex.EncodeToString(b[:]), cacheControl: cacheControl}
}

// ETag is the strong validator of a response: its key computed at its
// store sequence (and, with upstream data, at its birth time, so that a 304
// never outlives the cache entry).
func (hc HTTPCaching) ETag(e *Entry) string {
	var b strings.Builder
	b.Grow(64)
	b.WriteByte('"')
	b.WriteString(hc.epoch)
	b.WriteByte('-')
	b.WriteString(strconv.FormatUint(e.Seq, 36))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(e.Key[:12]))
	if e.Born != 0 {
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(e.Born, 36))
	}
	b.WriteByte('"')
	return b.String()
}

// SetHeaders sets the ETag, Cache-Control and Vary of a GET response.
func (hc HTTPCaching) SetHeaders(h http.Header, etag string) {
	h["Etag"] = []string{etag}
	h["Cache-Control"] = []string{hc.cacheControl}
	h["Vary"] = []string{varyHeaders}
}

// Replay writes a stored (or just computed, cacheable) response: the same
// status, headers and bytes, with HTTP caching headers on GET, and 304
// without a body when If-None-Match names its ETag.
func (hc HTTPCaching) Replay(w http.ResponseWriter, r *http.Request, e *Entry, get bool) {
	h := w.Header()
	CopyHeader(h, e.Header)
	if get {
		hc.SetHeaders(h, e.ETag)
		if ETagMatch(r.Header.Get("If-None-Match"), e.ETag) {
			h.Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h["Content-Length"] = e.ContentLength
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.Body)
}

// ETagMatch is If-None-Match's weak comparison of a header value (a list
// of entity tags, or *) with etag.
func ETagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		if part == "*" {
			return true
		}
		part = strings.TrimPrefix(part, "W/")
		if part == etag {
			return true
		}
	}
	return false
}

// CopyHeader sets every header of src in dst.
func CopyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// Capture buffers what a handler writes, so that it can be stored and
// replayed, and so that headers (ETag) can be added after the fact.
type Capture struct {
	header http.Header
	status int
	body   *bytes.Buffer
}

// NewCapture captures into body (the caller's, a pooled buffer perhaps).
func NewCapture(body *bytes.Buffer) *Capture {
	return &Capture{header: http.Header{}, body: body}
}

func (c *Capture) Header() http.Header { return c.header }
func (c *Capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *Capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}

// Status is the status written, 200 if none was.
func (c *Capture) Status() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}

// Body is the bytes written so far (the buffer's: valid until it is
// reused).
func (c *Capture) Body() []byte { return c.body.Bytes() }
