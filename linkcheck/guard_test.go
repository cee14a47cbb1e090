package linkcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/linkcheck"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

func TestRefusal(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":                "loopback address",
		"127.9.9.9":                "loopback address",
		"10.1.2.3":                 "private address",
		"172.16.0.1":               "private address",
		"172.31.255.255":           "private address",
		"192.168.1.1":              "private address",
		"169.254.169.254":          "link-local address", // the cloud metadata address
		"100.64.0.1":               "shared address (CGNAT)",
		"100.127.255.254":          "shared address (CGNAT)",
		"0.0.0.0":                  "unspecified address",
		"0.1.2.3":                  "unspecified address",
		"255.255.255.255":          "reserved address",
		"224.0.0.1":                "multicast address",
		"239.255.255.250":          "multicast address",
		"198.18.0.1":               "benchmarking address",
		"::1":                      "loopback address",
		"::":                       "unspecified address",
		"fe80::1":                  "link-local address",
		"fe80::1%eth0":             "link-local address",
		"fc00::1":                  "private address",
		"fd00:ec2::254":            "private address", // the IPv6 metadata address
		"ff02::1":                  "multicast address",
		"::ffff:127.0.0.1":         "loopback address",
		"::ffff:169.254.169.254":   "link-local address",
		"::ffff:10.0.0.1":          "private address",
		"::ffff:0.0.0.0":           "unspecified address",
		"::ffff:100.64.0.1":        "shared address (CGNAT)",
		"::127.0.0.1":              "loopback address", // IPv4-compatible
		"::169.254.169.254":        "link-local address",
		"::a00:1":                  "private address",
		"64:ff9b::7f00:1":          "loopback address", // NAT64
		"64:ff9b::a9fe:a9fe":       "link-local address",
		"2002:a9fe:a9fe::1":        "link-local address", // 6to4
		"2002:c0a8:101::1":         "private address",
		"8.8.8.8":                  "",
		"93.184.215.14":            "",
		"100.128.0.1":              "",
		"172.32.0.1":               "",
		"2606:4700:4700::1111":     "",
		"::ffff:8.8.8.8":           "",
		"64:ff9b::808:808":         "",
		"2002:808:808::1":          "",
		"2a00:1450:4001:81c::200e": "",
	} {
		if got := linkcheck.Refusal(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Refusal(%s) = %q, want %q", addr, got, want)
		}
	}
}

// hits is a loopback web site that counts the requests to each path and
// keeps their Authorization headers.
type hits struct {
	site *site
	mu   sync.Mutex
	n    map[string]int
	auth []string
}

func newHits(t *testing.T, routes map[string]http.HandlerFunc) *hits {
	h := &hits{n: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.n[r.URL.Path]++
		n := h.n[r.URL.Path]
		if a := r.Header.Get("Authorization"); a != "" {
			h.auth = append(h.auth, r.URL.Path+": "+a)
		}
		h.mu.Unlock()
		if f := routes[r.URL.Path]; f != nil {
			r.Header.Set("X-Hit", string(rune('0'+n)))
			f(w, r)
		}
	})
	h.site = newSite(t, mux)
	return h
}

func (h *hits) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[path]
}

func (h *hits) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, v := range h.n {
		n += v
	}
	return n
}

func (h *hits) port(t *testing.T) string {
	_, p, err := net.SplitHostPort(h.site.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// resolver answers from a table, and "no such host" for any other name:
// the tests never ask a real DNS server.
type resolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups map[string]int
}

func (r *resolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[host]++
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func redirectTo(loc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusFound)
	}
}

// TestInternalAddressesRefused checks links to a loopback server that
// stands for the library's own network (inside), directly, by name and
// through redirects from a server that stands for the outside world
// (outside: on loopback too, made reachable by the test's address policy).
// inside must see no request at all, and what is recorded and published
// is status 0, no final URL and the reason.
func TestInternalAddressesRefused(t *testing.T) {
	goroutineGuard(t)
	inside := newHits(t, nil)
	in := inside.site.Listener.Addr().String()
	inPort := inside.port(t)

	outside := newHits(t, map[string]http.HandlerFunc{
		"/ok":             func(w http.ResponseWriter, r *http.Request) {},
		"/to-inside":      redirectTo("http://" + in + "/secret"),
		"/to-inside-name": redirectTo("http://intranet.test:" + inPort + "/secret"),
		"/to-localhost":   redirectTo("http://localhost:" + inPort + "/secret"),
		"/to-mapped":      redirectTo("http://[::ffff:127.0.0.1]:" + inPort + "/secret"),
		"/loop":           redirectTo("/loop"),
		"/ping":           redirectTo("/pong"),
		"/pong":           redirectTo("/ping"),
		"/file":           redirectTo("file:///etc/passwd"),
		"/chain": func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			redirectTo("/chain?n="+strconv.Itoa(n+1))(w, r)
		},
		"/javascript":   redirectTo("javascript:alert(1)"),
		"/bad-location": redirectTo("http://[::1"),
		"/forbidden":    func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) },
		"/auth": func(w http.ResponseWriter, r *http.Request) {
			redirectTo("http://again:secret2@outside.test:"+outsidePort(r)+"/landing")(w, r)
		},
		"/landing": func(w http.ResponseWriter, r *http.Request) {},
		"/slow-then-ok": func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Hit") == "1" {
				w.WriteHeader(http.StatusRequestTimeout)
			}
		},
		"/busy-then-ok": func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Hit") == "1" {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		},
	})
	outPort := outside.port(t)
	out := "http://outside.test:" + outPort
	outAddr := netip.MustParseAddrPort(outside.site.Listener.Addr().String())

	res := &resolver{lookups: map[string]int{}, names: map[string][]netip.Addr{
		"outside.test":  {outAddr.Addr()},
		"intranet.test": {netip.MustParseAddr("127.0.0.1")},
		"private.test":  {netip.MustParseAddr("10.0.0.7")},
		"metadata.test": {netip.MustParseAddr("::ffff:169.254.169.254")},
		"cgnat.test":    {netip.MustParseAddr("100.64.1.1")},
		"ula.test":      {netip.MustParseAddr("fd12:3456::1")},
		// A name with a refused and an allowed address: only the allowed
		// one is dialled.
		"mixed.test": {netip.MustParseAddr("127.0.0.1"), outAddr.Addr()},
	}}

	// Each refused link with the reason it must record.
	refused := map[string]string{
		"http://" + in + "/a":                           "refused: loopback address",
		"http://localhost:" + inPort + "/b":             "refused: loopback address",
		"http://LocalHost.:" + inPort + "/b2":           "refused: loopback address",
		"http://[::1]:" + inPort + "/c":                 "refused: loopback address",
		"http://0.0.0.0:" + inPort + "/d":               "refused: unspecified address",
		"http://[::ffff:7f00:1]:" + inPort + "/e":       "refused: loopback address",
		"http://169.254.169.254/latest/meta-data/":      "refused: link-local address",
		"http://intranet.test:" + inPort + "/f":         "refused: loopback address",
		"http://private.test/g":                         "refused: private address",
		"http://metadata.test/latest/meta-data/":        "refused: link-local address",
		"http://cgnat.test/h":                           "refused: shared address (CGNAT)",
		"http://ula.test/i":                             "refused: private address",
		out + "/to-inside":                              "refused: loopback address",
		out + "/to-inside-name":                         "refused: loopback address",
		out + "/to-localhost":                           "refused: loopback address",
		out + "/to-mapped":                              "refused: loopback address",
		"http://user:pw@" + in + "/with-credentials":    "refused: loopback address",
		"https://intranet.test:" + inPort + "/over-tls": "refused: loopback address",
	}
	// The other links, with what they must record.
	others := map[string]incidentlib.SourceCheck{
		out + "/ok":                                        {Status: 200, FinalURL: out + "/ok"},
		"http://mixed.test:" + outPort + "/ok":             {Status: 200, FinalURL: "http://mixed.test:" + outPort + "/ok"},
		"http://user:pw@outside.test:" + outPort + "/auth": {Status: 200, FinalURL: out + "/landing"},
		out + "/loop":                                      {Error: "redirect loop"},
		out + "/ping":                                      {Error: "redirect loop"},
		out + "/file":                                      {Error: "unsupported scheme"},
		out + "/chain":                                     {Error: "too many redirects"},
		out + "/javascript":                                {Error: "unsupported scheme"},
		out + "/bad-location":                              {Error: "malformed URL"},
		out + "/forbidden":                                 {Status: 403, FinalURL: out + "/forbidden"},
		out + "/slow-then-ok":                              {Status: 200, FinalURL: out + "/slow-then-ok"},
		out + "/busy-then-ok":                              {Status: 200, FinalURL: out + "/busy-then-ok"},
		"http://nowhere.test/":                             {Error: "host not found"},
	}

	// The store: one incident per link, the first of which already holds
	// what an earlier check that reached inside recorded.
	var incs []*incidentlib.Incident
	add := func(u string) {
		id := incidentlib.FormatID(uint32(len(incs) + 1))
		incs = append(incs, &incidentlib.Incident{ID: id, Org: "Org", OrgSlug: "org",
			Title: incidentlib.Text{En: "Incident"}, Sources: []incidentlib.Source{{URL: u, Kind: "blog"}},
			UpdatedAt: "2026-01-02T03:04:05Z"})
	}
	for u := range refused {
		add(u)
	}
	for u := range others {
		add(u)
	}
	incs[0].Sources[0] = incs[0].Sources[0].WithCheck(incidentlib.SourceCheck{Status: 200, CheckedAt: "2026-01-01T00:00:00Z", FinalURL: "http://" + in + "/admin"})
	db := testutil.ServerStore(t, incs, storage.Options{NoSync: true})

	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cfg := linkcheck.DefaultConfig()
	cfg.Timeout = 10 * time.Second
	cfg.Now = func() time.Time { return now }
	cfg.Resolver = res
	cfg.Reachable = func(ap netip.AddrPort) bool {
		return ap == outAddr || linkcheck.Refusal(ap.Addr()) == ""
	}
	c := newChecker(t, cfg)
	ctx := context.Background()
	sum, err := c.Run(ctx, db.Incidents())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Refused != len(refused) || sum.Skipped != 0 {
		t.Errorf("summary %s, want %d refused", sum, len(refused))
	}

	if n := inside.total(); n != 0 {
		t.Errorf("the inside server got %d requests: %v", n, inside.n)
	}
	for path, want := range map[string]int{"/to-inside": 1, "/loop": 1, "/ping": 1, "/pong": 1, "/file": 1, "/chain": 11, "/javascript": 1, "/bad-location": 1, "/forbidden": 1, "/auth": 1, "/landing": 1, "/slow-then-ok": 2, "/busy-then-ok": 2} {
		if got := outside.count(path); got != want {
			t.Errorf("outside %s: %d requests, want %d (permanent failures are not retried, transient ones are)", path, got, want)
		}
	}
	if len(outside.auth) > 0 {
		t.Errorf("credentials from URLs were sent: %v", outside.auth)
	}
	for _, name := range []string{"outside.test", "intranet.test"} {
		if res.lookups[name] == 0 {
			t.Errorf("%s was never looked up through the checker's resolver", name)
		}
	}

	// What the store holds.
	found, err := db.Incidents().FindIncidentsByIDs(ctx, idsOf(incs))
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range found {
		s := inc.Sources[0]
		got, ok := s.Check()
		want, known := others[s.URL]
		if why, isRefused := refused[s.URL]; isRefused {
			want, known = incidentlib.SourceCheck{Error: why}, true
		}
		if !known {
			t.Fatalf("unexpected source %s", s.URL)
		}
		want.CheckedAt = "2026-11-30T12:00:00Z"
		if !ok || got != want {
			t.Errorf("%s: recorded %+v, want %+v", s.URL, got, want)
		}
		if _, has := s.Extra[incidentlib.SourceFinalURLField]; has && want.FinalURL == "" {
			t.Errorf("%s: final_url kept %s", s.URL, s.Extra[incidentlib.SourceFinalURLField])
		}
		if strings.Contains(string(s.Extra[incidentlib.SourceCheckErrorField]), "127.0.0.1") {
			t.Errorf("%s: the reason names the address the host resolved to: %s", s.URL, s.Extra[incidentlib.SourceCheckErrorField])
		}
	}

	// What a client sees.
	ts, _ := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{})
	for _, inc := range found {
		u := inc.Sources[0].URL
		if _, ok := refused[u]; !ok {
			continue
		}
		src := graphQLSource(t, ts.URL, inc.ID)
		if src.Status == nil || *src.Status != 0 || src.FinalURL != nil || src.URL != u {
			t.Errorf("GraphQL %s: %+v, want status 0 and no finalUrl", u, src)
		}
	}
}

func outsidePort(r *http.Request) string {
	_, p, _ := net.SplitHostPort(r.Host)
	return p
}

type gqlSource struct {
	URL       string
	Status    *int
	CheckedAt *string
	FinalURL  *string `json:"finalUrl"`
}

func graphQLSource(t *testing.T, base, id string) gqlSource {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": `{ incident(id: "` + id + `") { sources { url status checkedAt finalUrl } } }`})
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Data struct {
			Incident struct{ Sources []gqlSource }
		}
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Data.Incident.Sources) != 1 {
		t.Fatalf("GraphQL answered %s (%v)", b, err)
	}
	return out.Data.Incident.Sources[0]
}

// TestRefusedBeforeAnyDial: a link to an address literal the policy
// refuses makes no request and no connection at all.
func TestRefusedBeforeAnyDial(t *testing.T) {
	goroutineGuard(t)
	cfg := linkcheck.DefaultConfig()
	cfg.Resolver = &resolver{lookups: map[string]int{}}
	var dials atomic.Int64
	cfg.Connect = loopbackOnly(t, &dials)
	c := newChecker(t, cfg)
	urls := []string{"http://169.254.169.254/latest/meta-data/", "http://0.0.0.0/", "http://[::]/", "http://[fe80::1%25eth0]/",
		"http://[fd00:ec2::254]/", "http://255.255.255.255/", "http://224.0.0.251/", "http://localhost/", "http://a.localhost/",
		"http://[::ffff:a9fe:a9fe]/", "http://[::a9fe:a9fe]/", "https://10.0.0.1:8443/"}
	n := 0
	c.Check(context.Background(), urls, func(r linkcheck.Result) {
		n++
		if r.Status != 0 || r.FinalURL != "" || !strings.HasPrefix(r.SourceCheck.Error, "refused: ") || r.Skipped {
			t.Errorf("%s: %+v", r.URL, r)
		}
	})
	if st := c.Stats(); n != len(urls) || st.Requests != 0 || st.Attempts != 0 || dials.Load() != 0 {
		t.Fatalf("%d results for %d URLs; %d requests, %d attempts and %d dials were made", n, len(urls), st.Requests, st.Attempts, dials.Load())
	}
}

// TestAllowPrivate: --linkcheck-allow-private gives back the reach of
// before, loopback and localhost included.
func TestAllowPrivate(t *testing.T) {
	goroutineGuard(t)
	inside := newHits(t, map[string]http.HandlerFunc{"/ok": func(w http.ResponseWriter, r *http.Request) {}})
	inPort := inside.port(t)
	cfg := linkcheck.DefaultConfig()
	cfg.AllowPrivate = true
	cfg.Resolver = &resolver{lookups: map[string]int{}, names: map[string][]netip.Addr{"intranet.test": {netip.MustParseAddr("127.0.0.1")}}}
	c := newChecker(t, cfg)
	urls := []string{"http://127.0.0.1:" + inPort + "/ok", "http://localhost:" + inPort + "/ok", "http://intranet.test:" + inPort + "/ok"}
	c.Check(context.Background(), urls, func(r linkcheck.Result) {
		if r.Status != 200 || r.FinalURL != r.URL || r.SourceCheck.Error != "" {
			t.Errorf("%s: %+v", r.URL, r)
		}
	})
	if n := inside.count("/ok"); n != len(urls) {
		t.Fatalf("%d requests reached the server for %d links", n, len(urls))
	}
}
