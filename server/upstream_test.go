package server_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
	"github.com/incidentlib/incidentlib/upstream"
)

// upInc is a small valid incident.
func upInc(id, title string, related ...string) *incidentlib.Incident {
	return &incidentlib.Incident{ID: id, Org: "Upstream Org", OrgSlug: "upstream-org", Title: incidentlib.Text{En: title}, Related: related}
}

// upstreamPair is a local library whose incidents link to incidents of an
// upstream library (a second real server), with the upstream's
// /api/v1/incidents calls counted.
type upstreamPair struct {
	local    *testServer
	upstream *testServer
	front    *httptest.Server // the upstream as the local library sees it
	calls    atomic.Int64     // /api/v1/incidents requests that reached the upstream
	client   *outbound.Client
}

func upClientConfig() outbound.Config {
	cfg := outbound.DefaultConfig()
	cfg.BackoffBase, cfg.BackoffCap = time.Millisecond, 20*time.Millisecond
	cfg.BreakerMinRequests, cfg.BreakerOpenTimeout = 5, time.Minute
	cfg.RetryBudgetMinPerSecond = 1
	return cfg
}

// newUpstreamPair builds the pair; fault, if set, answers instead of the
// upstream while it returns true.
func newUpstreamPair(t *testing.T, timeout time.Duration, fault func(w http.ResponseWriter, r *http.Request) bool) *upstreamPair {
	t.Helper()
	p := &upstreamPair{}
	p.upstream = apiServer(t, server.Config{}, []*incidentlib.Incident{
		upInc("IL-9001", "Upstream one", "IL-9004"),
		upInc("IL-9002", "Upstream two"),
		upInc("IL-9003", "Upstream three"),
		upInc("IL-9004", "Upstream four", "IL-0001"),
	})
	p.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/incidents" {
			p.calls.Add(1)
		}
		if fault != nil && fault(w, r) {
			return
		}
		p.upstream.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(p.front.Close)
	local := []*incidentlib.Incident{
		upInc("IL-0001", "Local one", "IL-9001", "IL-0002", "IL-9002"),
		upInc("IL-0002", "Local two"),
	}
	local[1].RecurrenceOf = "IL-9003"
	var err error
	if p.client, err = outbound.New(upClientConfig(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.client.Close)
	cfg := upstream.DefaultConfig(p.front.URL)
	cfg.Timeout = timeout
	up, err := upstream.New(cfg, p.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The store with the upstream composed behind it, as serve
	// --upstream composes it (server.Assemble).
	db := testutil.ServerStore(t, local, storage.Options{RecordCache: 20000, NoSync: true, UpstreamLinks: true})
	p.local = serveStore(t, db, server.Config{Upstream: true}, testutil.ServerParts{Incidents: upstream.LocalFirst(db.Incidents(), up)})
	return p
}

const upListQuery = `{ incidents(first: 10, orderBy: {field: ID, direction: ASC}) { nodes {
	id title related { id title related { id title } } recurrenceOf { id title } } } }`

type upList struct {
	Incidents struct {
		Nodes []struct {
			ID      string
			Title   string
			Related []struct {
				ID      string
				Title   string
				Related []struct{ ID, Title string }
			}
			RecurrenceOf *struct{ ID, Title string }
		}
	}
}

func TestUpstreamResolvesLinkedIncidents(t *testing.T) {
	p := newUpstreamPair(t, 2*time.Second, nil)
	var got upList
	p.local.data(t, upListQuery, nil, &got)
	n := got.Incidents.Nodes
	if len(n) != 2 || len(n[0].Related) != 3 || n[0].Related[0].Title != "Upstream one" || n[0].Related[1].ID != "IL-0002" || n[0].Related[2].Title != "Upstream two" {
		t.Fatalf("related not resolved from the upstream: %+v", n)
	}
	if r := n[0].Related[0].Related; len(r) != 1 || r[0].Title != "Upstream four" {
		t.Fatalf("the upstream incident's own links not resolved: %+v", n[0].Related[0])
	}
	if n[1].RecurrenceOf == nil || n[1].RecurrenceOf.Title != "Upstream three" {
		t.Fatalf("recurrenceOf not resolved: %+v", n[1])
	}
	if c := p.calls.Load(); c < 1 || c > 2 {
		t.Fatalf("%d upstream calls for a query with two levels of links", c)
	}
	t.Run("Cached", func(t *testing.T) {
		before := p.calls.Load()
		p.local.data(t, upListQuery, nil, &got)
		if p.calls.Load() != before {
			t.Fatalf("the same query called the upstream again (%d calls)", p.calls.Load()-before)
		}
	})
	t.Run("IncidentAndNode", func(t *testing.T) {
		var d struct {
			Incident struct{ Title string }
			Node     struct{ ID string }
			Missing  *struct{ ID string }
		}
		p.local.data(t, `{ incident(id: "IL-9002") { title } node(id: "IL-9004") { id } missing: incident(id: "IL-7777") { id } }`, nil, &d)
		if d.Incident.Title != "Upstream two" || d.Node.ID != "IL-9004" || d.Missing != nil {
			t.Fatalf("%+v", d)
		}
		before := p.calls.Load()
		p.local.data(t, `{ missing: incident(id: "IL-7777") { id } }`, nil, &d)
		if p.calls.Load() != before {
			t.Fatal("an id the upstream does not have was asked for again within the cache TTL")
		}
	})
}

func TestUpstreamFailures(t *testing.T) {
	faults := map[string]func(w http.ResponseWriter, r *http.Request){
		"Hangs": func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		"Answers500": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		},
		"ResetsConnections": func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				conn.Close()
			}
		},
		"RetryAfter3600": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			http.Error(w, "later", http.StatusServiceUnavailable)
		},
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			upGoroutineGuard(t)
			var hits atomic.Int64
			p := newUpstreamPair(t, 300*time.Millisecond, func(w http.ResponseWriter, r *http.Request) bool {
				hits.Add(1)
				fault(w, r)
				return true
			})
			start := time.Now()
			for i := 0; p.client.Stats().BreakerRejections == 0; i++ {
				if i > 200 {
					t.Fatalf("the breaker never opened: %+v", p.client.Stats())
				}
				// Each query asks for other upstream ids, so the cache
				// never answers for the upstream.
				id := incidentlib.FormatID(uint32(8000 + i))
				r := p.local.query(t, `{ incident(id: "IL-0001") { id title related { id title } } other: incident(id: "`+id+`") { id } }`, nil)
				var d struct {
					Incident struct {
						ID, Title string
						Related   []struct{ ID string }
					}
				}
				if err := json.Unmarshal(r.Data, &d); err != nil || d.Incident.Title != "Local one" {
					t.Fatalf("the local data was not served: %s %+v", r.Data, r.Errors)
				}
				if len(d.Incident.Related) != 1 || d.Incident.Related[0].ID != "IL-0002" {
					t.Fatalf("related should hold the local incident only: %+v", d.Incident.Related)
				}
				if r.code() != incidentlib.EUPSTREAMUNAVAILABLE {
					t.Fatalf("errors %+v, want %s", r.Errors, incidentlib.EUPSTREAMUNAVAILABLE)
				}
			}
			st := p.client.Stats()
			cfg := upClientConfig()
			windows := uint64(time.Since(start)/cfg.RetryBudgetWindow) + 1
			if limit := uint64(cfg.RetryBudgetRatio*float64(st.Requests)) + windows*uint64(cfg.RetryBudgetMinPerSecond)*uint64(cfg.RetryBudgetWindow/time.Second) + 1; st.Retries > limit {
				t.Fatalf("%d retries for %d requests, over the budget of %d", st.Retries, st.Requests, limit)
			}
			if uint64(hits.Load()) > st.Attempts {
				t.Fatalf("%d upstream hits for %d attempts", hits.Load(), st.Attempts)
			}
			if name == "RetryAfter3600" && (st.RetryAfterTooLong == 0 || st.Retries != 0) {
				t.Fatalf("Retry-After: 3600 was waited for or retried: %+v", st)
			}
			// With the breaker open, the upstream is not called at all.
			before := hits.Load()
			r := p.local.query(t, `{ incident(id: "IL-7001") { id } }`, nil)
			if r.code() != incidentlib.EUPSTREAMUNAVAILABLE || hits.Load() != before {
				t.Fatalf("with the breaker open: %+v, %d new hits", r.Errors, hits.Load()-before)
			}
			if got := p.client.BreakerState(p.front.URL); got != outbound.BreakerOpen {
				t.Fatalf("breaker %s", got)
			}
		})
	}
}

// A query for local data completes while the upstream still hangs on an
// earlier query: it never waits on the upstream.
func TestLocalQueriesDoNotWaitOnAHangingUpstream(t *testing.T) {
	upGoroutineGuard(t)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var hanging atomic.Bool
	p := newUpstreamPair(t, 30*time.Second, func(w http.ResponseWriter, r *http.Request) bool {
		hanging.Store(true)
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		hanging.Store(false)
		http.Error(w, "gave up", http.StatusInternalServerError)
		return true
	})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the servers close, whatever happens
	done := make(chan *gqlResponse, 1)
	go func() {
		done <- p.local.query(t, `{ incident(id: "IL-0001") { title related { id title } } }`, nil)
	}()
	<-entered
	var d struct {
		Incident  struct{ Title string }
		Incidents struct{ TotalCount int }
	}
	p.local.data(t, `{ incident(id: "IL-0002") { title } incidents { totalCount } }`, nil, &d)
	if !hanging.Load() {
		t.Fatal("the upstream stopped hanging before the local query was answered")
	}
	if d.Incident.Title != "Local two" || d.Incidents.TotalCount != 2 {
		t.Fatalf("local query: %+v", d)
	}
	unblock()
	r := <-done
	if r.code() != incidentlib.EUPSTREAMUNAVAILABLE || !strings.Contains(string(r.Data), `"Local one"`) {
		t.Fatalf("the query that waited on the upstream: %s %+v", r.Data, r.Errors)
	}
}

// upGoroutineGuard fails the test if, after every later cleanup, the
// goroutines do not return (within 5s) to the number running now. The
// cache of an Upstream (golang-lru/v2 expirable, v2.0.7) runs a ticker
// goroutine that it never stops, one per Upstream for the life of the
// process; those are not counted.
func upGoroutineGuard(t *testing.T) {
	t.Helper()
	base := upGoroutines()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for upGoroutines() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d goroutines, baseline %d\n%s", upGoroutines(), base, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func upGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.TrimSpace(g) != "" && !strings.Contains(g, "golang-lru/v2/expirable.NewLRU") {
			n++
		}
	}
	return n
}
