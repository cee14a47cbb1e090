// Package linkcheck checks that the sources of the library's incidents are
// still there: every sources[].url once, with HEAD (GET when the server
// answers HEAD with 405 or 501), following at most 10 redirects, at most
// PerHost checks at a time per host and Concurrency in all, through its own
// outbound client (pooled keep-alive connections, retries, a circuit
// breaker per host). Each source records the HTTP status of the final
// response (0 for no response), when it was checked, the final URL after
// redirects, and for no response the reason (incidentlib.SourceCheck).
//
// The checker stays outside: it resolves every host itself and connects
// only to the addresses it resolved and allowed (see Refusal; AllowPrivate
// lifts it), on the first hop and after every redirect. It never sends the
// credentials of a URL (user:password@ is dropped), and retries only what
// may pass: timeouts, refused or reset connections, 408, 429, 500, 502,
// 503 and 504. Everything else (a refused address, a redirect loop, more
// than 10 redirects, a redirect to another scheme, a malformed URL, a
// certificate that is not accepted, any other status) is final at once.
package linkcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/outbound"
)

// Config configures a Checker.
type Config struct {
	// PerHost is how many checks run at once against one host
	// (scheme://host:port). Unit: requests. Default 2; 1 to 64.
	PerHost int
	// Concurrency is how many checks run at once in all. Unit: requests.
	// Default 16; 1 to 1024.
	Concurrency int
	// Timeout bounds the check of one URL: HEAD, the GET fallback,
	// redirects and retries. Unit: duration. Default 15s; must be positive.
	Timeout time.Duration
	// WriteBatch is how many checked URLs are recorded per store
	// transaction. Unit: URLs. Default 500; must be positive.
	WriteBatch int
	// Logger receives progress; default slog.Default().
	Logger *slog.Logger
	// Now is the clock of checked_at; default time.Now.
	Now func() time.Time
	// AllowPrivate lets checks reach every address, those Refusal names
	// too (serve and linkcheck --linkcheck-allow-private). Default false:
	// a link whose host is, resolves to or redirects to such an address is
	// not requested and records status 0 and the reason.
	AllowPrivate bool
	// Resolver looks up host names; default net.DefaultResolver.
	Resolver Resolver
	// Reachable, if set, decides in place of Refusal and AllowPrivate which
	// addresses a check may connect to (each address a host resolves to, on
	// every hop). Tests use it to let a loopback server stand for an
	// outside one. Default nil.
	Reachable func(netip.AddrPort) bool
	// Connect, if set, opens the connections to the addresses the policy
	// allowed (addr is always ip:port, never a name). Tests use it to make
	// sure that nothing leaves loopback, whatever the policy does.
	// Default nil: a net.Dialer with the client's DialTimeout and KeepAlive.
	Connect func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{PerHost: 2, Concurrency: 16, Timeout: 15 * time.Second, WriteBatch: 500}
}

func (c *Config) validate() error {
	var errs []error
	if c.PerHost < 1 || c.PerHost > 64 {
		errs = append(errs, fmt.Errorf("linkcheck per-host concurrency must be 1 to 64 requests, got %d", c.PerHost))
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		errs = append(errs, fmt.Errorf("linkcheck concurrency must be 1 to 1024 requests, got %d", c.Concurrency))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("linkcheck timeout must be a positive duration, got %s", c.Timeout))
	}
	if c.WriteBatch <= 0 {
		errs = append(errs, fmt.Errorf("linkcheck write batch must be a positive number of URLs, got %d", c.WriteBatch))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return errors.Join(errs...)
}

// maxRedirects is how many redirects a check follows.
const maxRedirects = 10

// ClientConfig is the outbound configuration for link checks: the
// production defaults with the pool sized to PerHost, a request deadline of
// Timeout, room for a breaker and retry budget per host of a whole library
// (MaxHosts 4096), and 408 and 500 retried. New adds the checker's dialer
// and redirect rule.
func ClientConfig(c Config) outbound.Config {
	oc := outbound.DefaultConfig()
	if c.PerHost > 0 {
		oc.MaxConnsPerHost = c.PerHost
		oc.MaxIdleConnsPerHost = c.PerHost
	}
	if c.Timeout > 0 {
		oc.RequestTimeout = c.Timeout
	}
	oc.MaxHosts = 4096
	oc.UserAgent = "incidentlib-linkcheck/1"
	oc.RetryOn500, oc.RetryOn408 = true, true
	return oc
}

// Checker checks source URLs.
type Checker struct {
	client *outbound.Client
	guard  *guard
	cfg    Config
}

// New builds a checker with its own outbound client, made from oc
// (normally ClientConfig(cfg)) with the checker's dialer (the address
// policy) and redirect rule (none: the checker follows redirects itself)
// in place of whatever oc had there. The client has no metrics registry:
// its host label would have a value per source host.
func New(oc outbound.Config, cfg Config) (*Checker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := newGuard(cfg, oc.DialTimeout, oc.KeepAlive)
	oc.DialContext = g.dial
	oc.NoRedirects = true
	client, err := outbound.New(oc, nil)
	if err != nil {
		return nil, err
	}
	return &Checker{client: client, guard: g, cfg: cfg}, nil
}

// Stats returns the counters of the checker's outbound client.
func (c *Checker) Stats() outbound.Stats { return c.client.Stats() }

// Close closes the idle connections of the checker's client.
func (c *Checker) Close() { c.client.Close() }

// Result is the check of one URL.
type Result struct {
	URL string
	incidentlib.SourceCheck
	// Err says why no response came (Status 0; SourceCheck.Error is its
	// Reason), or why the URL was skipped.
	Err error
	// Skipped marks a URL that was not really checked: the circuit breaker
	// of its host was open, or the run was cancelled. Nothing is recorded.
	Skipped bool
}

// Check checks each of urls once and calls each with every result, from
// one goroutine, in the order the checks finish. It returns when every URL
// is done or ctx ended (the rest are then reported skipped).
func (c *Checker) Check(ctx context.Context, urls []string, each func(Result)) {
	// Queue the URLs per host. ready holds, once each, the hosts with URLs
	// waiting and fewer than PerHost checks running, in turn: a host never
	// has more than PerHost checks running and a busy host never holds up
	// the others.
	type host struct {
		queue   []string
		active  int
		inReady bool
	}
	var ready []*host
	byKey := map[string]*host{}
	for _, u := range urls {
		k := hostKey(u)
		h := byKey[k]
		if h == nil {
			h = &host{inReady: true}
			byKey[k] = h
			ready = append(ready, h)
		}
		h.queue = append(h.queue, u)
	}
	type job struct {
		h   *host
		url string
	}
	type done struct {
		h *host
		r Result
	}
	jobs := make(chan job)
	results := make(chan done)
	workers := min(c.cfg.Concurrency, len(urls))
	for range workers {
		go func() {
			for j := range jobs {
				results <- done{j.h, c.checkOne(ctx, j.url)}
			}
		}()
	}
	inflight := 0
	for len(ready) > 0 || inflight > 0 {
		var send chan job
		var next job
		if len(ready) > 0 && inflight < workers {
			send, next = jobs, job{ready[0], ready[0].queue[0]}
		}
		select {
		case send <- next:
			h := next.h
			ready = ready[1:]
			h.queue = h.queue[1:]
			h.active++
			inflight++
			if h.inReady = len(h.queue) > 0 && h.active < c.cfg.PerHost; h.inReady {
				ready = append(ready, h)
			}
		case d := <-results:
			h := d.h
			h.active--
			inflight--
			if !h.inReady && len(h.queue) > 0 {
				h.inReady = true
				ready = append(ready, h)
			}
			each(d.r)
		}
	}
	close(jobs)
}

// checkOne checks one URL: HEAD, then GET if HEAD is not allowed.
func (c *Checker) checkOne(ctx context.Context, raw string) Result {
	r := Result{URL: raw}
	if ctx.Err() != nil {
		r.Skipped, r.Err = true, ctx.Err()
		return r
	}
	var status int
	var final string
	var err error
	if why := incidentlib.ValidHTTPURL(raw); why != "" {
		err = &Error{Reason: "not an http(s) URL", Detail: why}
	} else {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		status, final, err = c.follow(cctx, http.MethodHead, raw)
		if err == nil && (status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented) {
			status, final, err = c.follow(cctx, http.MethodGet, raw)
		}
	}
	switch {
	case errors.Is(err, outbound.ErrCircuitOpen), ctx.Err() != nil:
		r.Skipped, r.Err = true, err
		return r
	case err != nil:
		r.Err, r.SourceCheck.Error = err, Reason(err)
	default:
		r.Status, r.FinalURL = status, final
	}
	r.CheckedAt = c.cfg.Now().UTC().Format(time.RFC3339)
	return r
}

// follow requests raw with method and follows its redirects, each hop
// checked against the address policy before it is requested. It returns
// the status and URL of the final response.
func (c *Checker) follow(ctx context.Context, method, raw string) (status int, final string, err error) {
	u, err := target(nil, raw)
	if err != nil {
		return 0, "", err
	}
	seen := map[string]bool{}
	for hops := 0; ; hops++ {
		at := u.String()
		switch {
		case seen[at]:
			return 0, "", &Error{Reason: "redirect loop", Detail: at}
		case hops > maxRedirects:
			return 0, "", &Error{Reason: "too many redirects", Detail: fmt.Sprintf("more than %d, the last to %s", maxRedirects, at)}
		}
		seen[at] = true
		if e := c.guard.literal(u.Hostname(), port(u)); e != nil {
			return 0, "", e
		}
		req, err := http.NewRequestWithContext(ctx, method, at, nil)
		if err != nil {
			return 0, "", &Error{Reason: "malformed URL", Detail: err.Error()}
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return 0, "", err
		}
		resp.Body.Close() // the client drains a bounded amount so the connection is reused
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			return resp.StatusCode, at, nil
		}
		if u, err = target(u, loc); err != nil {
			return 0, "", err
		}
	}
}

// target parses the URL of a hop (a redirect's Location relative to the
// URL that answered it), refusing other schemes and dropping credentials:
// user:password@ is never sent, as Basic auth or otherwise.
func target(base *url.URL, ref string) (*url.URL, error) {
	var u *url.URL
	var err error
	if base == nil {
		u, err = url.Parse(ref)
	} else {
		u, err = base.Parse(ref)
	}
	if err != nil {
		return nil, &Error{Reason: "malformed URL", Detail: err.Error()}
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil, &Error{Reason: "unsupported scheme", Detail: fmt.Sprintf("%q in %q", u.Scheme, ref)}
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, &Error{Reason: "malformed URL", Detail: fmt.Sprintf("no host in %q", ref)}
	}
	u.User = nil
	return u, nil
}

// port is the port a URL's request goes to.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func hostKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// Summary says what a run found.
type Summary struct {
	URLs, Hosts                                   int
	OK, Redirected, ClientErrors, ServerErrors    int
	NoResponse, Skipped, IncidentsWritten, Others int
	// Refused counts the no-response checks whose address the policy
	// refused (they are among NoResponse).
	Refused int
}

func (s Summary) String() string {
	return fmt.Sprintf("checked %d source URLs on %d hosts: %d ok (%d redirected), %d 4xx, %d 5xx, %d other statuses, %d no response (%d refused addresses), %d skipped; %d incidents updated",
		s.URLs, s.Hosts, s.OK, s.Redirected, s.ClientErrors, s.ServerErrors, s.Others, s.NoResponse, s.Refused, s.Skipped, s.IncidentsWritten)
}

// Run checks every source URL of the store and records each result on the
// sources that cite the URL, WriteBatch URLs per transaction, as results
// come in (a run that stops keeps what it recorded).
func (c *Checker) Run(ctx context.Context, db incidentlib.SourceCheckStore) (Summary, error) {
	cites, err := db.SourceURLs(ctx)
	if err != nil {
		return Summary{}, err
	}
	urls := make([]string, 0, len(cites))
	hosts := map[string]bool{}
	for u := range cites {
		urls = append(urls, u)
		hosts[hostKey(u)] = true
	}
	slices.Sort(urls)
	sum := Summary{URLs: len(urls), Hosts: len(hosts)}
	c.cfg.Logger.Info("checking source links", "urls", len(urls), "hosts", len(hosts))
	checks := map[string]incidentlib.SourceCheck{}
	var werr error
	flush := func() {
		if len(checks) == 0 || werr != nil {
			return
		}
		var ids []string
		for u := range checks {
			ids = append(ids, cites[u]...)
		}
		slices.SortFunc(ids, func(a, b string) int {
			x, _ := incidentlib.ParseID(a)
			y, _ := incidentlib.ParseID(b)
			return int(int64(x) - int64(y))
		})
		ids = slices.Compact(ids)
		n, err := db.RecordSourceChecks(context.WithoutCancel(ctx), ids, checks)
		sum.IncidentsWritten += n
		werr = err
		clear(checks)
	}
	c.Check(ctx, urls, func(r Result) {
		switch {
		case r.Skipped:
			sum.Skipped++
			return
		case r.Status == 0:
			sum.NoResponse++
			if strings.HasPrefix(r.SourceCheck.Error, "refused: ") {
				sum.Refused++
			}
		case r.Status < 300:
			sum.OK++
			if r.FinalURL != r.URL {
				sum.Redirected++
			}
		case r.Status >= 400 && r.Status < 500:
			sum.ClientErrors++
		case r.Status >= 500:
			sum.ServerErrors++
		default:
			sum.Others++
		}
		checks[r.URL] = r.SourceCheck
		if len(checks) >= c.cfg.WriteBatch {
			flush()
		}
	})
	flush()
	if werr != nil {
		return sum, fmt.Errorf("record link checks: %w", werr)
	}
	c.cfg.Logger.Info("checked source links", "summary", sum.String())
	return sum, ctx.Err()
}

// Every runs Run at once and then every interval until ctx ends, logging
// each summary; the background job of serve --linkcheck-interval.
func (c *Checker) Every(ctx context.Context, db incidentlib.SourceCheckStore, interval time.Duration) {
	for {
		if _, err := c.Run(ctx, db); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Error("link check failed", "err", err)
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
