package gqledge

import (
	"fmt"
	"strings"
)

// HTTP caching of GraphQL GET responses and downloads (ETags,
// If-None-Match, Cache-Control, Vary) is respcache's (respcache/httpcache.go);
// here is the --cache-control value it sends.

// DefaultCacheControl lets any cache keep a response but makes it ask
// again (with If-None-Match) before each use: with exact invalidation an
// answer is either still current (304, no body) or new.
const DefaultCacheControl = "no-cache"

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
