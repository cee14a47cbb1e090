package streams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// Subscriptions through the real handler, over loopback, with Go clients
// of both transports (the JavaScript clients run in e2e/).

func TestSubscriptionSSE(t *testing.T) {
	f := testutil.NewLive(t, 20, server.Config{})
	t.Run("EventsInOrder", func(t *testing.T) {
		s, st, b := testutil.OpenSSE(t, f.HS.URL, nil, nil)
		if s == nil {
			t.Fatalf("%d %s", st, b)
		}
		defer s.Close()
		var seqs []uint64
		for i := range 5 {
			seqs = append(seqs, f.Write(t, i, fmt.Sprintf("sse %d", i), ""))
		}
		for i := range 5 {
			ev, code := s.Event(t)
			if code != "" {
				t.Fatal(code)
			}
			if ev.Seq != strconv.FormatUint(seqs[i], 10) || ev.ID != f.Incs[i].ID || ev.Action != "UPDATE" ||
				!ev.MatchesFilter || ev.Incident == nil || ev.Incident.Title != fmt.Sprintf("sse %d", i) {
				t.Fatalf("event %d: %+v", i, ev)
			}
		}
	})
	t.Run("Delete", func(t *testing.T) {
		s := testutil.MustSSE(t, f.HS.URL, map[string]any{"f": map[string]any{"severities": []string{"sev1"}}})
		defer s.Close()
		if _, err := f.DB.Incidents().DeleteIncident(context.Background(), f.Incs[19].ID, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		ev, code := s.Event(t)
		if code != "" || ev.Action != "DELETE" || ev.Incident != nil || ev.MatchesFilter || ev.ID != f.Incs[19].ID {
			t.Fatalf("%+v %s", ev, code)
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		head := f.DB.Incidents().Seq()
		// Each is a refusal in an event stream (a retry cannot change it:
		// gqledge/streams/refusal.go), with its code.
		for name, c := range map[string]struct {
			vars map[string]any
			code string
		}{
			"Malformed":    {map[string]any{"since": "x1"}, incidentlib.EBADREQUEST},
			"Ahead":        {map[string]any{"since": strconv.FormatUint(head+100, 10)}, incidentlib.ESEQUENCEAHEAD},
			"BadFilter":    {map[string]any{"f": map[string]any{"severities": 3}}, ""},
			"UnknownField": {nil, ""},
		} {
			t.Run(name, func(t *testing.T) {
				vars := c.vars
				if name == "UnknownField" {
					resp, b := testutil.RoundTrip(t, testutil.SSEPost(f.HS.URL, `subscription { incidentChanged { nope } }`))
					if testutil.StreamRefusal(t, resp.StatusCode, b) == "" {
						t.Fatalf("%d %s", resp.StatusCode, b)
					}
					return
				}
				s, st, b := testutil.OpenSSE(t, f.HS.URL, vars, nil)
				if s == nil {
					t.Fatalf("refused with a status: %d %s", st, b)
				}
				if code := s.Refusal(t); (c.code != "" && code != c.code) || code == "" {
					t.Fatalf("code %q, want %q", code, c.code)
				}
			})
		}
	})
	t.Run("Query", func(t *testing.T) {
		_, b := testutil.RoundTrip(t, testutil.SSEPost(f.HS.URL, `{ incident(id: "IL-0001") { id } }`))
		if !strings.Contains(string(b), `event: next`) || !strings.Contains(string(b), `"IL-0001"`) || !strings.Contains(string(b), "event: complete") {
			t.Fatalf("%s", b)
		}
	})
}

// TestSubscriptionFilter: a change is delivered when the incident matched
// before or after it, matchesFilter says which; other changes are not.
func TestSubscriptionFilter(t *testing.T) {
	f := testutil.NewLive(t, 10, server.Config{})
	// Incident 0 starts as sev1, incident 1 as sev3.
	f.Write(t, 0, "a", "sev1")
	f.Write(t, 1, "b", "sev3")
	s, st, b := testutil.OpenSSE(t, f.HS.URL, map[string]any{"f": map[string]any{"severities": []string{"sev1"}}}, nil)
	if s == nil {
		t.Fatalf("%d %s", st, b)
	}
	defer s.Close()
	f.Write(t, 1, "b2", "sev3")         // never matched: not delivered
	f.Write(t, 0, "a2", "sev3")         // left: delivered, matchesFilter false
	f.Write(t, 1, "b3", "sev1")         // entered: delivered, true
	f.Write(t, 0, "a3", "sev3")         // still out: not delivered
	last := f.Write(t, 1, "b4", "sev1") // still in: delivered
	want := []struct {
		id      string
		matches bool
		title   string
	}{{f.Incs[0].ID, false, "a2"}, {f.Incs[1].ID, true, "b3"}, {f.Incs[1].ID, true, "b4"}}
	for i, w := range want {
		ev, code := s.Event(t)
		if code != "" || ev.ID != w.id || ev.MatchesFilter != w.matches || ev.Incident.Title != w.title {
			t.Fatalf("event %d: %+v %s, want %+v", i, ev, code, w)
		}
		if i == len(want)-1 && ev.Seq != strconv.FormatUint(last, 10) {
			t.Fatalf("seq %s, want %d", ev.Seq, last)
		}
	}
}

// TestSubscriptionResume: a client that drops its connection at random and
// resumes with the last seq it saw sees every write's latest state once,
// in order, and nothing twice, while writes go on.
func TestSubscriptionResume(t *testing.T) {
	writes := 600
	if testing.Short() {
		writes = 200
	}
	testResume(t, writes)
}

func testResume(t *testing.T, writes int) {
	f := testutil.NewLive(t, 50, server.Config{})
	final := map[string]string{} // id → the title of its last write
	var mu sync.Mutex
	done := make(chan struct{})
	// The writer ends before the store closes, even when the test fails.
	t.Cleanup(func() { <-done })
	var headAfter uint64
	go func() {
		defer close(done)
		for i := range writes {
			title := fmt.Sprintf("w%d", i)
			f.Write(t, i*7, title, "")
			mu.Lock()
			final[f.Incs[(i*7)%len(f.Incs)].ID] = title
			mu.Unlock()
		}
		headAfter = f.DB.Incidents().Seq()
	}()
	seen := map[string]string{}
	var last uint64
	var lastSeen atomic.Uint64 // last, for the watcher below
	since := strconv.FormatUint(f.DB.Incidents().Seq(), 10)
	reconnects, behind := 0, 0
	rng := rand.New(rand.NewPCG(uint64(writes), 24))
	finished := func() bool {
		select {
		case <-done:
			return last >= headAfter
		default:
			return false
		}
	}
	for !finished() {
		vars := map[string]any{"since": since}
		s, st, b := testutil.OpenSSE(t, f.HS.URL, vars, nil)
		if s == nil {
			t.Fatalf("%d %s", st, b)
		}
		// Once every write is committed and seen, a stream waiting for
		// one more event would wait for ever: the watcher ends it.
		watch := make(chan struct{})
		go func() {
			select {
			case <-watch:
				return
			case <-done:
			}
			for lastSeen.Load() < headAfter {
				select {
				case <-watch:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			s.Close()
		}()
		// Read a random number of events, then drop the connection.
		n := 1 + rng.IntN(50)
		for range n {
			if finished() {
				break
			}
			ev, code, err := s.EventOrEnd(t)
			if err != nil {
				if finished() {
					break
				}
				t.Fatalf("stream: %v", err)
			}
			if code == incidentlib.EUNAVAILABLE {
				// Fallen behind its buffer while the writer ran ahead:
				// closed, as a slow subscriber is; it resumes with since.
				behind++
				break
			}
			if code != "" {
				t.Fatalf("code %s", code)
			}
			seq, _ := strconv.ParseUint(ev.Seq, 10, 64)
			if seq <= last {
				t.Fatalf("seq %d after %d: a duplicate or out of order", seq, last)
			}
			last = seq
			lastSeen.Store(seq)
			seen[ev.ID] = ev.Incident.Title
			since = ev.Seq
		}
		close(watch)
		s.Close()
		reconnects++
	}
	for id, title := range final {
		if seen[id] != title {
			t.Fatalf("%s: last seen %q, last written %q", id, seen[id], title)
		}
	}
	t.Logf("%d writes, %d reconnects, %d of them closed for falling behind", writes, reconnects, behind)
}

// TestSubscriptionSlow: a subscriber that does not read is closed when it
// falls behind its buffer, while the writer goes on and the others keep
// receiving.
func TestSubscriptionSlow(t *testing.T) {
	f := testutil.NewLive(t, 20, server.Config{SubscriptionLimits: live.Options{Buffer: 64},
		Subscriptions: gqledge.LiveOptions{WriteTimeout: 5 * time.Minute}})
	// The slow client reads nothing until the writes are done, through a
	// small receive buffer, and asks for large events: the socket's
	// buffers fill, then the hub's 64 events (a read of the log hands out at most one
	// change per incident: 20 here), then it is closed.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	c, _, err := websocket.Dial(context.Background(), "ws"+f.HS.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	ws := &testutil.WSClient{C: c}
	defer ws.Close(websocket.StatusNormalClosure, "")
	ws.Init(t, nil)
	ws.Send(t, map[string]any{"id": "slow", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { incidentChanged { seq incident { summary } } }`}})
	fast := testutil.MustSSE(t, f.HS.URL, nil)
	defer fast.Close()
	testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	const n = 600
	var fastLast atomic.Uint64
	go func() {
		for {
			name, data, err := fast.Next()
			if err != nil || name != "next" {
				return
			}
			var r testutil.LiveResult
			if json.Unmarshal(data, &r) != nil || len(r.Errors) > 0 {
				return
			}
			seq, _ := strconv.ParseUint(r.Data.IncidentChanged.Seq, 10, 64)
			fastLast.Store(seq)
		}
	}()
	pad := strings.Repeat("a long summary ", 1300) // under the 20,000 characters of a text
	for i := range n {
		inc := *f.Incs[i%len(f.Incs)]
		inc.Summary.En = fmt.Sprintf("%d %s", i, pad)
		inc.UpdatedAt, inc.Review = "", incidentlib.Review{}
		if _, err := f.DB.Incidents().UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every write went through, and the other subscriber reaches the last.
	head := f.DB.Incidents().Seq()
	for i := 0; fastLast.Load() != head; i++ {
		if i > 6000 {
			t.Fatalf("the fast subscriber is at %d, the store at %d", fastLast.Load(), head)
		}
		time.Sleep(10 * time.Millisecond)
	}
	testutil.WaitMetric(t, f, `incidentlib_subscriptions_dropped_total{reason="slow"}`, 1)
	// The slow one then reads what was buffered, and an error saying how
	// to resume.
	for {
		m := ws.Read(t)
		if m.Type == "next" {
			continue
		}
		if m.Type != "error" || m.ID != "slow" || !strings.Contains(string(m.Payload), incidentlib.EUNAVAILABLE) ||
			!strings.Contains(string(m.Payload), "since") {
			t.Fatalf("%+v %s", m, m.Payload)
		}
		break
	}
	// Then the connection goes, with all it holds: close 1013, try again
	// later (with since).
	if _, _, err := ws.C.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("after the slow error: %v", err)
	}
}

// TestSubscriptionLimits: per-client and total limits, as 429 over SSE and
// close 4429 over WebSocket.
func TestSubscriptionLimits(t *testing.T) {
	f := testutil.NewLive(t, 5, server.Config{SubscriptionLimits: live.Options{MaxPerClient: 2, MaxTotal: 3}})
	a := testutil.MustSSE(t, f.HS.URL, nil)
	defer a.Close()
	b := testutil.MustSSE(t, f.HS.URL, nil)
	defer b.Close()
	if s, st, body := testutil.OpenSSE(t, f.HS.URL, nil, nil); s != nil || st != http.StatusTooManyRequests || testutil.ErrorCode(t, body) != incidentlib.ESUBSCRIPTIONLIMIT {
		t.Fatalf("third of a client: %d %s", st, body)
	}
	// Over WebSocket the same client's subscribe closes the connection
	// with 4429 (its token, which would make it another client, may come
	// in connection_init).
	same := testutil.DialWS(t, f.HS.URL, nil)
	defer same.Close(websocket.StatusNormalClosure, "")
	same.Init(t, nil)
	same.Subscribe(t, "1", nil)
	if _, _, err := same.C.Read(context.Background()); websocket.CloseStatus(err) != 4429 || !strings.Contains(err.Error(), incidentlib.ESUBSCRIPTIONLIMIT) {
		t.Fatalf("third of a client over WebSocket: %v", err)
	}
	// Another client (a token) gets one more: the total is 3, then 4429.
	tok := testutil.CreateToken(t, f, "lim")
	ws := testutil.DialWS(t, f.HS.URL, nil)
	defer ws.Close(websocket.StatusNormalClosure, "")
	ws.Init(t, map[string]any{"Authorization": "Bearer " + tok})
	ws.Subscribe(t, "1", nil)
	testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	// The total is reached: an upgrade is refused with 429.
	_, resp, err := websocket.Dial(context.Background(), "ws"+f.HS.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("upgrade over the total: %v %v", err, resp)
	}
	ws.Subscribe(t, "2", nil)
	_, _, err = ws.C.Read(context.Background())
	if websocket.CloseStatus(err) != 4429 || !strings.Contains(err.Error(), incidentlib.ESUBSCRIPTIONLIMIT) {
		t.Fatalf("over the total: %v", err)
	}
}

// TestSubscriptionShutdown: StopSubscriptions completes every stream, SSE
// and WebSocket, and WaitSubscriptions returns.
func TestSubscriptionShutdown(t *testing.T) {
	f := testutil.NewLive(t, 5, server.Config{})
	s := testutil.MustSSE(t, f.HS.URL, nil)
	defer s.Close()
	ws := testutil.DialWS(t, f.HS.URL, nil)
	defer ws.Close(websocket.StatusNormalClosure, "")
	ws.Init(t, nil)
	ws.Subscribe(t, "op", nil)
	testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	f.Srv.StopSubscriptions()
	if _, code := s.Event(t); code != "complete" {
		t.Fatalf("SSE ended with %q", code)
	}
	if m := ws.Read(t); m.Type != "complete" || m.ID != "op" {
		t.Fatalf("%+v", m)
	}
	_, _, err := ws.C.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("close %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Srv.WaitSubscriptions(ctx); err != nil {
		t.Fatal(err)
	}
	// New ones are refused.
	if s, st, _ := testutil.OpenSSE(t, f.HS.URL, nil, nil); s != nil || st != http.StatusServiceUnavailable {
		t.Fatalf("after shutdown: %d", st)
	}
}

func TestSubscriptionWebSocket(t *testing.T) {
	f := testutil.NewLive(t, 10, server.Config{CORSOrigins: []string{"https://app.example"}})
	t.Run("Events", func(t *testing.T) {
		ws := testutil.DialWS(t, f.HS.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Init(t, nil)
		ws.Subscribe(t, "a", map[string]any{"f": map[string]any{"ids": []string{f.Incs[2].ID}}})
		ws.Subscribe(t, "b", nil)
		testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 2)
		seq := f.Write(t, 2, "ws two", "")
		got := map[string]testutil.LiveEvent{}
		for len(got) < 2 {
			m := ws.Read(t)
			if m.Type != "next" {
				t.Fatalf("%+v %s", m, m.Payload)
			}
			var r testutil.LiveResult
			if err := json.Unmarshal(m.Payload, &r); err != nil {
				t.Fatal(err)
			}
			got[m.ID] = r.Data.IncidentChanged
		}
		for id, ev := range got {
			if ev.Seq != strconv.FormatUint(seq, 10) || ev.Incident.Title != "ws two" {
				t.Fatalf("%s: %+v", id, ev)
			}
		}
		// complete from the client ends one operation.
		ws.Send(t, map[string]any{"id": "a", "type": "complete"})
		testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	})
	t.Run("SinceRefused", func(t *testing.T) {
		ws := testutil.DialWS(t, f.HS.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Init(t, nil)
		ws.Subscribe(t, "x", map[string]any{"since": "99999999"})
		m := ws.Read(t)
		if m.Type != "error" || m.ID != "x" || !strings.Contains(string(m.Payload), incidentlib.ESEQUENCEAHEAD) {
			t.Fatalf("%+v %s", m, m.Payload)
		}
	})
	t.Run("Origin", func(t *testing.T) {
		for origin, ok := range map[string]bool{"https://evil.example": false, "https://app.example": true, f.HS.URL: true} {
			h := http.Header{"Origin": {origin}}
			c, resp, err := websocket.Dial(context.Background(), "ws"+f.HS.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
			if ok != (err == nil) {
				t.Fatalf("%s: %v %v", origin, err, resp)
			}
			if c != nil {
				c.Close(websocket.StatusNormalClosure, "")
			}
		}
	})
	t.Run("BadToken", func(t *testing.T) {
		ws := testutil.DialWS(t, f.HS.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Send(t, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer il_nope"}})
		_, _, err := ws.C.Read(context.Background())
		if websocket.CloseStatus(err) != 4403 {
			t.Fatalf("%v", err)
		}
	})
}

// A subscription open while the server's reads become stale (a cluster
// node losing its quorum in the middle of a stream) marks each event sent
// while so with extensions.stale, and stops marking when it is level
// again, over SSE and over graphql-transport-ws.
func TestSubscriptionStaleMidStream(t *testing.T) {
	var stale atomic.Bool
	f := testutil.NewLive(t, 10, server.Config{Stale: stale.Load})
	staleOfEvent := func(t *testing.T, data []byte) bool {
		t.Helper()
		var r struct {
			Extensions map[string]any `json:"extensions"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return r.Extensions["stale"] == true
	}
	t.Run("SSE", func(t *testing.T) {
		s := testutil.MustSSE(t, f.HS.URL, nil)
		defer s.Close()
		testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="sse"}`, 1)
		for i, want := range []bool{false, true, false} {
			stale.Store(want)
			f.Write(t, i, fmt.Sprintf("sse stale %d", i), "")
			_, data, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if got := staleOfEvent(t, data); got != want {
				t.Fatalf("event %d: extensions.stale %v, want %v: %s", i, got, want, data)
			}
		}
	})
	t.Run("WebSocket", func(t *testing.T) {
		stale.Store(false)
		c := testutil.DialWS(t, f.HS.URL, nil)
		defer c.Close(websocket.StatusNormalClosure, "")
		c.Init(t, nil)
		c.Subscribe(t, "1", nil)
		testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
		for i, want := range []bool{false, true, false} {
			stale.Store(want)
			f.Write(t, 5+i, fmt.Sprintf("ws stale %d", i), "")
			m := c.Read(t)
			if m.Type != "next" {
				t.Fatalf("event %d: %s", i, m.Type)
			}
			if got := staleOfEvent(t, m.Payload); got != want {
				t.Fatalf("event %d: extensions.stale %v, want %v: %s", i, got, want, m.Payload)
			}
		}
	})
}
