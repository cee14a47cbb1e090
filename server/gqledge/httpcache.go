package gqledge

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// HTTP caching of GraphQL GET responses (queries by text or by persisted
// hash), so that browsers and CDNs can keep list and incident pages:
//
//   - ETag: "EPOCH-SEQ-KEY", from the store sequence the response was
//     computed at and the hash of its cache key (document, operation,
//     variables, language and the request headers that shape it). EPOCH is
//     random per process, so a restart (perhaps with another schema or
//     binary) never answers 304 for bytes it did not produce.
//   - If-None-Match matching the current ETag is answered 304 with no body;
//     the ETag is only ever compared against a response known to succeed
//     (from the response cache, or just computed), never guessed.
//   - Cache-Control: configurable (--cache-control), DefaultCacheControl by
//     default; error responses to GET get "no-store".
//   - Vary names every request header in the key.
//
// POST responses carry no ETag or Cache-Control: HTTP caches do not keep
// them, and a client that wants HTTP caching uses GET (with a persisted
// hash, the URL stays short).

// DefaultCacheControl lets any cache keep a response but makes it ask
// again (with If-None-Match) before each use: with exact invalidation an
// answer is either still current (304, no body) or new.
const DefaultCacheControl = "no-cache"

// varyHeaders are the request headers a response depends on; they are part
// of the cache key.
const varyHeaders = "Accept, Accept-Language, Authorization, Origin"

// newEpoch is a random per-process ETag prefix.
func newEpoch() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// etag is the strong validator of a response: its key computed at its
// store sequence (and, with upstream data, at its birth time, so that a 304
// never outlives the cache entry).
func (o *Edge) etag(e *cachedResponse) string {
	var b strings.Builder
	b.Grow(64)
	b.WriteByte('"')
	b.WriteString(o.epoch)
	b.WriteByte('-')
	b.WriteString(strconv.FormatUint(e.seq, 36))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(e.key[:12]))
	if e.born != 0 {
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(e.born, 36))
	}
	b.WriteByte('"')
	return b.String()
}

func (o *Edge) setCacheHeaders(h http.Header, etag string) {
	h["Etag"] = []string{etag}
	h["Cache-Control"] = []string{o.cacheControl}
	h["Vary"] = []string{varyHeaders}
}

// etagMatch is If-None-Match's weak comparison of a header value (a list
// of entity tags, or *) with etag.
func etagMatch(header, etag string) bool {
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

// ValidateCacheControl checks a Cache-Control value for --cache-control:
// comma-separated directives, each a token with an optional =token or
// ="quoted string" argument. It says nothing about whether the directives
// are wise; it refuses what no cache could read.
func ValidateCacheControl(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("a Cache-Control value such as %q is needed", DefaultCacheControl)
	}
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		name, arg, hasArg := strings.Cut(part, "=")
		if !isToken(name) {
			return fmt.Errorf("%q is not a Cache-Control directive", part)
		}
		if hasArg {
			quoted := len(arg) >= 2 && arg[0] == '"' && arg[len(arg)-1] == '"' && !strings.ContainsAny(arg[1:len(arg)-1], "\"\\\r\n")
			if !isToken(arg) && !quoted {
				return fmt.Errorf("%q has a malformed argument", part)
			}
		}
	}
	return nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
