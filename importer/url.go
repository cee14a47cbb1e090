package importer

import (
	"net"
	"net/url"
	"strings"
)

// NormalizeURL returns the form of a source URL used to find the same
// postmortem in several collections:
//
//   - http and https are the same: the result always says https;
//   - scheme and host are lower case, leading "www." and trailing dots of
//     the host are dropped, and so are the default ports 80 and 443;
//   - the fragment is dropped, except a "#!" hashbang fragment, which on
//     sites such as groups.google.com names the page itself;
//   - utm_* query parameters are dropped (the others are kept in order), and
//     so is an empty query;
//   - a trailing slash of the path is dropped ("https://a.com/" is
//     "https://a.com").
//
// The path keeps its case. A string that is not an absolute http(s) URL
// is returned trimmed of surrounding space and otherwise as it is.
//
// The result is its own normal form: a query or "#!" fragment that ends
// in space ("http://a.test/? #") would come out with a trailing space that
// the next call trims, changing what follows it (the query " " is kept,
// the query "" is dropped), so such a result is normalized again, trimmed.
func NormalizeURL(u string) string {
	n := normalizeURL(u)
	for {
		t := strings.TrimSpace(n)
		if t == n {
			return n
		}
		n = normalizeURL(t) // shorter each time: this ends
	}
}

func normalizeURL(u string) string {
	u = strings.TrimSpace(u)
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return u
	}
	scheme := strings.ToLower(p.Scheme)
	if scheme != "http" && scheme != "https" {
		return u
	}
	host := strings.ToLower(p.Hostname())
	port := p.Port()
	host = strings.TrimRight(host, ".")
	for strings.HasPrefix(host, "www.") {
		host = strings.TrimPrefix(host, "www.")
	}
	if host == "" {
		return u // dots alone make no host
	}
	if port == "80" || port == "443" {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	path := p.EscapedPath()
	for strings.HasSuffix(path, "/") {
		path = strings.TrimSuffix(path, "/")
	}
	var query []string
	if p.RawQuery != "" {
		for _, kv := range strings.Split(p.RawQuery, "&") {
			if kv == "" {
				continue
			}
			name, _, _ := strings.Cut(kv, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if strings.HasPrefix(strings.ToLower(name), "utm_") {
				continue
			}
			query = append(query, kv)
		}
	}
	var b strings.Builder
	b.WriteString("https://")
	if p.User != nil {
		b.WriteString(p.User.String())
		b.WriteByte('@')
	}
	b.WriteString(host)
	b.WriteString(path)
	if len(query) > 0 {
		b.WriteByte('?')
		b.WriteString(strings.Join(query, "&"))
	}
	if strings.HasPrefix(p.Fragment, "!") {
		b.WriteByte('#')
		b.WriteString(p.EscapedFragment())
	}
	return b.String()
}
