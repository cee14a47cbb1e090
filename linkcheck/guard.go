package linkcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The address policy of link checks. A source URL comes from whoever can
// get a record into the library, and the check's result is published
// (sources { status finalUrl }), so a check that could reach the server's
// own network would let anyone map it. The checker therefore resolves each
// host itself, keeps only the addresses the policy allows, and dials those
// very addresses (no second lookup that DNS rebinding could answer
// differently), on the first hop and on every redirect.

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Refusal says why the link checker does not reach addr by default ("" if
// it does): loopback, private (RFC 1918), link-local (the cloud metadata
// address 169.254.169.254 among them), unique-local, CGNAT, multicast,
// unspecified, broadcast and the other special-purpose ranges, and IPv6
// addresses that carry such an IPv4 address (IPv4-mapped, IPv4-compatible,
// NAT64, 6to4).
func Refusal(addr netip.Addr) string {
	addr = addr.WithZone("")
	if addr.Is4In6() {
		addr = addr.Unmap()
	}
	if addr.Is6() {
		if v4, ok := embeddedV4(addr); ok {
			if why := Refusal(v4); why != "" {
				return why
			}
		}
	}
	switch {
	case !addr.IsValid():
		return "invalid address"
	case addr.IsUnspecified():
		return "unspecified address"
	case addr.IsLoopback():
		return "loopback address"
	case addr.IsPrivate():
		return "private address"
	case addr.IsLinkLocalUnicast():
		return "link-local address"
	case addr.IsMulticast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast address"
	}
	for _, r := range special {
		if r.prefix.Contains(addr) {
			return r.why
		}
	}
	return ""
}

// special are the ranges net/netip has no predicate for.
var special = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified address"}, // "this network"
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "special-purpose address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address"},   // 255.255.255.255 (broadcast) too
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private address"}, // local-use NAT64
	{netip.MustParsePrefix("100::/64"), "discard address"},
	{netip.MustParsePrefix("2001::/32"), "tunnel address (Teredo)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address"},
}

var (
	compat = netip.MustParsePrefix("::/96")        // IPv4-compatible (deprecated)
	nat64  = netip.MustParsePrefix("64:ff9b::/96") // NAT64 well-known prefix
	sixTo4 = netip.MustParsePrefix("2002::/16")    // 6to4
)

// embeddedV4 returns the IPv4 address an IPv6 address stands for, in the
// forms that route to it.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case compat.Contains(a):
		if a.IsUnspecified() || a.IsLoopback() {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// Error is a check that failed for good: it is recorded at once and never
// retried (Permanent answers true, which the outbound client honours).
type Error struct {
	// Reason is what is recorded and published (check_error): a few words
	// from a fixed list, never an address the checker resolved.
	Reason string
	// Detail is for the log only.
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return e.Reason
	}
	return e.Reason + ": " + e.Detail
}

// Permanent marks the error as one a new attempt would not change.
func (e *Error) Permanent() bool { return true }

// Reason says in a few words, from a fixed list, why a check got no
// response: what is recorded (check_error) and published. It never holds
// an address or a message from the network.
func Reason(err error) string {
	var (
		e         *Error
		certErr   *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recordErr tls.RecordHeaderError
		dnsErr    *net.DNSError
		netErr    net.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Reason
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		return "TLS certificate not accepted"
	case errors.As(err, &recordErr):
		return "not a TLS server"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host not found"
		}
		return "host lookup failed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	}
	return "request failed"
}

func refused(why, detail string) *Error {
	return &Error{Reason: "refused: " + why, Detail: detail}
}

// guard is the address policy and the dialer of one checker.
type guard struct {
	allowPrivate bool
	reachable    func(netip.AddrPort) bool
	resolver     Resolver
	connect      func(ctx context.Context, network, addr string) (net.Conn, error)
}

// check says why the checker does not connect to ap, nil if it may.
func (g *guard) check(ap netip.AddrPort) *Error {
	if g.reachable != nil {
		if g.reachable(ap) {
			return nil
		}
	} else if g.allowPrivate {
		return nil
	}
	why := Refusal(ap.Addr())
	if why == "" {
		if g.reachable == nil {
			return nil
		}
		why = "address not allowed"
	}
	return refused(why, ap.String())
}

// isLocalhost reports whether host is a localhost name, which resolves to
// loopback wherever it is looked up (RFC 6761): no lookup is made.
func isLocalhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// literal refuses, before any lookup or dial, a host that is a refused IP
// address or a localhost name (host as url.URL.Hostname gives it).
func (g *guard) literal(host, port string) *Error {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return &Error{Reason: "malformed URL", Detail: "port " + port}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return g.check(netip.AddrPortFrom(a, uint16(p)))
	}
	if isLocalhost(host) {
		for _, a := range localhost {
			if e := g.check(netip.AddrPortFrom(a, uint16(p))); e != nil {
				e.Detail = host
				return e
			}
		}
	}
	return nil
}

var localhost = []netip.Addr{netip.IPv6Loopback(), netip.AddrFrom4([4]byte{127, 0, 0, 1})}

// dial is the outbound client's DialContext: it resolves the host once,
// drops the addresses the policy refuses and connects to one of the others,
// by address.
func (g *guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &Error{Reason: "malformed URL", Detail: addr}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, &Error{Reason: "malformed URL", Detail: addr}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if isLocalhost(host) {
		addrs = localhost
	} else {
		addrs, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				return nil, &Error{Reason: "host not found", Detail: host}
			}
			return nil, err
		}
	}
	var first *Error
	var lastErr error
	tried := 0
	for _, a := range addrs {
		a = a.Unmap()
		if (network == "tcp4" && !a.Is4()) || (network == "tcp6" && !a.Is6()) {
			continue
		}
		ap := netip.AddrPortFrom(a, uint16(p))
		if e := g.check(ap); e != nil {
			if first == nil {
				first = e
			}
			continue
		}
		tried++
		conn, err := g.connect(ctx, network, ap.String())
		if err == nil {
			return conn, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case lastErr != nil:
		return nil, lastErr
	case first != nil:
		// Every address was refused. The detail names the host, not the
		// addresses it resolved to.
		first.Detail = host
		return nil, first
	}
	return nil, &Error{Reason: "host not found", Detail: fmt.Sprintf("%s has no %s address", host, network)}
}

func newGuard(cfg Config, dialTimeout, keepAlive time.Duration) *guard {
	r := cfg.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	connect := cfg.Connect
	if connect == nil {
		connect = (&net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive}).DialContext
	}
	return &guard{
		allowPrivate: cfg.AllowPrivate,
		reachable:    cfg.Reachable,
		resolver:     r,
		connect:      connect,
	}
}
