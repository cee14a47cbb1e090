package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
)

// Subscriptions through the real handler, over loopback, with Go clients
// of both transports (the JavaScript clients run in e2e/).

const liveDoc = `subscription($f: IncidentFilter, $since: String) {
  incidentChanged(filter: $f, since: $since) { seq action id matchesFilter incident { id title severity { slug } } }
}`

type liveEvent struct {
	Seq           string
	Action        string
	ID            string
	MatchesFilter bool
	Incident      *struct {
		ID       string
		Title    string
		Severity *struct{ Slug string }
	}
}

// liveServer is a store of n generated incidents served with
// subscriptions.
type liveFixture struct {
	db   *storage.DB
	hs   *httptest.Server
	srv  *server.Server
	incs []*incidentlib.Incident
}

func newLive(t *testing.T, n int, cfg server.Config) *liveFixture {
	t.Helper()
	incs, err := gen.Generate(gen.Options{Count: n, Seed: 7, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	db := testutil.ServerStore(t, incs, storage.Options{})
	hs, srv := testutil.ServerTest(t, db, cfg, testutil.ServerParts{})
	t.Cleanup(srv.StopSubscriptions) // before the server closes
	return &liveFixture{db: db, hs: hs, srv: srv, incs: incs}
}

// write changes incident i's title (and severity when sev is set) and
// returns the store's sequence after it.
func (f *liveFixture) write(t testing.TB, i int, title, sev string) uint64 {
	t.Helper()
	inc := *f.incs[i%len(f.incs)]
	inc.Title.En = title
	if sev != "" {
		inc.Severity = sev
	}
	inc.UpdatedAt = ""
	inc.Review = incidentlib.Review{}
	if _, err := f.db.UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return f.db.Seq()
}

// sseStream is a Go client of GraphQL over SSE.
type sseStream struct {
	resp *http.Response
	sc   *bufio.Scanner
	stop context.CancelFunc
}

func body(vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": liveDoc, "variables": vars})
	return b
}

// openSSE starts a subscription; a refusal returns the response's status
// and body.
func openSSE(t testing.TB, url string, vars map[string]any, header http.Header) (*sseStream, int, []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body(vars)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode, b
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &sseStream{resp: resp, sc: sc, stop: cancel}, http.StatusOK, nil
}

// mustSSE starts a subscription that must not be refused.
func mustSSE(t testing.TB, url string, vars map[string]any) *sseStream {
	t.Helper()
	s, st, b := openSSE(t, url, vars, nil)
	if s == nil {
		t.Fatalf("refused: %d %s", st, b)
	}
	return s
}

func (s *sseStream) Close() { s.stop(); s.resp.Body.Close() }

// next returns the next event's name and data (keep-alive comments
// skipped); io.EOF at the end of the stream.
func (s *sseStream) next() (string, []byte, error) {
	var name string
	var data []byte
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if name != "" {
				return name, data, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = []byte(line[len("data: "):])
		case line == "data:":
		}
	}
	if err := s.sc.Err(); err != nil {
		return "", nil, err
	}
	return "", nil, io.EOF
}

type result struct {
	Data struct {
		IncidentChanged liveEvent
	}
	Errors []struct {
		Message    string
		Extensions map[string]any
	}
}

// event returns the next change, or the code of an error event, or
// "complete".
func (s *sseStream) event(t testing.TB) (liveEvent, string) {
	t.Helper()
	ev, code, err := s.eventOrEnd(t)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	return ev, code
}

// eventOrEnd is event, with the error that ended the stream.
func (s *sseStream) eventOrEnd(t testing.TB) (liveEvent, string, error) {
	t.Helper()
	name, data, err := s.next()
	if err != nil {
		return liveEvent{}, "", err
	}
	ev, code := decodeEvent(t, name, data)
	return ev, code, nil
}

func decodeEvent(t testing.TB, name string, data []byte) (liveEvent, string) {
	t.Helper()
	if name == "complete" {
		return liveEvent{}, "complete"
	}
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if len(r.Errors) > 0 {
		code, _ := r.Errors[0].Extensions["code"].(string)
		return liveEvent{}, code
	}
	return r.Data.IncidentChanged, ""
}

func errorCode(t testing.TB, b []byte) string {
	t.Helper()
	var r result
	if err := json.Unmarshal(b, &r); err != nil || len(r.Errors) == 0 {
		t.Fatalf("not a refusal: %s", b)
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

func TestSubscriptionSSE(t *testing.T) {
	f := newLive(t, 20, server.Config{})
	t.Run("EventsInOrder", func(t *testing.T) {
		s, st, b := openSSE(t, f.hs.URL, nil, nil)
		if s == nil {
			t.Fatalf("%d %s", st, b)
		}
		defer s.Close()
		var seqs []uint64
		for i := range 5 {
			seqs = append(seqs, f.write(t, i, fmt.Sprintf("sse %d", i), ""))
		}
		for i := range 5 {
			ev, code := s.event(t)
			if code != "" {
				t.Fatal(code)
			}
			if ev.Seq != strconv.FormatUint(seqs[i], 10) || ev.ID != f.incs[i].ID || ev.Action != "UPDATE" ||
				!ev.MatchesFilter || ev.Incident == nil || ev.Incident.Title != fmt.Sprintf("sse %d", i) {
				t.Fatalf("event %d: %+v", i, ev)
			}
		}
	})
	t.Run("Delete", func(t *testing.T) {
		s := mustSSE(t, f.hs.URL, map[string]any{"f": map[string]any{"severities": []string{"sev1"}}})
		defer s.Close()
		if _, err := f.db.DeleteIncident(context.Background(), f.incs[19].ID, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		ev, code := s.event(t)
		if code != "" || ev.Action != "DELETE" || ev.Incident != nil || ev.MatchesFilter || ev.ID != f.incs[19].ID {
			t.Fatalf("%+v %s", ev, code)
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		head := f.db.Seq()
		// Each is a refusal in an event stream (a retry cannot change it:
		// gqledge/livesserefusal.go), with its code.
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
					resp, b := roundTrip(t, ssePost(f.hs.URL, `subscription { incidentChanged { nope } }`))
					if streamRefusal(t, resp.StatusCode, b) == "" {
						t.Fatalf("%d %s", resp.StatusCode, b)
					}
					return
				}
				s, st, b := openSSE(t, f.hs.URL, vars, nil)
				if s == nil {
					t.Fatalf("refused with a status: %d %s", st, b)
				}
				if code := s.refusal(t); (c.code != "" && code != c.code) || code == "" {
					t.Fatalf("code %q, want %q", code, c.code)
				}
			})
		}
	})
	t.Run("Query", func(t *testing.T) {
		_, b := roundTrip(t, ssePost(f.hs.URL, `{ incident(id: "IL-0001") { id } }`))
		if !strings.Contains(string(b), `event: next`) || !strings.Contains(string(b), `"IL-0001"`) || !strings.Contains(string(b), "event: complete") {
			t.Fatalf("%s", b)
		}
	})
}

// TestSubscriptionFilter: a change is delivered when the incident matched
// before or after it, matchesFilter says which; other changes are not.
func TestSubscriptionFilter(t *testing.T) {
	f := newLive(t, 10, server.Config{})
	// Incident 0 starts as sev1, incident 1 as sev3.
	f.write(t, 0, "a", "sev1")
	f.write(t, 1, "b", "sev3")
	s, st, b := openSSE(t, f.hs.URL, map[string]any{"f": map[string]any{"severities": []string{"sev1"}}}, nil)
	if s == nil {
		t.Fatalf("%d %s", st, b)
	}
	defer s.Close()
	f.write(t, 1, "b2", "sev3")         // never matched: not delivered
	f.write(t, 0, "a2", "sev3")         // left: delivered, matchesFilter false
	f.write(t, 1, "b3", "sev1")         // entered: delivered, true
	f.write(t, 0, "a3", "sev3")         // still out: not delivered
	last := f.write(t, 1, "b4", "sev1") // still in: delivered
	want := []struct {
		id      string
		matches bool
		title   string
	}{{f.incs[0].ID, false, "a2"}, {f.incs[1].ID, true, "b3"}, {f.incs[1].ID, true, "b4"}}
	for i, w := range want {
		ev, code := s.event(t)
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
	f := newLive(t, 50, server.Config{})
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
			f.write(t, i*7, title, "")
			mu.Lock()
			final[f.incs[(i*7)%len(f.incs)].ID] = title
			mu.Unlock()
		}
		headAfter = f.db.Seq()
	}()
	seen := map[string]string{}
	var last uint64
	var lastSeen atomic.Uint64 // last, for the watcher below
	since := strconv.FormatUint(f.db.Seq(), 10)
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
		s, st, b := openSSE(t, f.hs.URL, vars, nil)
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
			ev, code, err := s.eventOrEnd(t)
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
	f := newLive(t, 20, server.Config{SubscriptionLimits: live.Options{Buffer: 64},
		Subscriptions: gqledge.LiveOptions{WriteTimeout: 5 * time.Minute}})
	// The slow client reads nothing until the writes are done, through a
	// small receive buffer, and asks for large events: the socket's
	// buffers fill, then the hub's 64 events (a read of the log hands out at most one
	// change per incident: 20 here), then it is closed.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	c, _, err := websocket.Dial(context.Background(), "ws"+f.hs.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	ws := &wsClient{c}
	defer ws.Close(websocket.StatusNormalClosure, "")
	ws.init(t, nil)
	ws.send(t, map[string]any{"id": "slow", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { incidentChanged { seq incident { summary } } }`}})
	fast := mustSSE(t, f.hs.URL, nil)
	defer fast.Close()
	waitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	const n = 600
	var fastLast atomic.Uint64
	go func() {
		for {
			name, data, err := fast.next()
			if err != nil || name != "next" {
				return
			}
			var r result
			if json.Unmarshal(data, &r) != nil || len(r.Errors) > 0 {
				return
			}
			seq, _ := strconv.ParseUint(r.Data.IncidentChanged.Seq, 10, 64)
			fastLast.Store(seq)
		}
	}()
	pad := strings.Repeat("a long summary ", 1300) // under the 20,000 characters of a text
	for i := range n {
		inc := *f.incs[i%len(f.incs)]
		inc.Summary.En = fmt.Sprintf("%d %s", i, pad)
		inc.UpdatedAt, inc.Review = "", incidentlib.Review{}
		if _, err := f.db.UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every write went through, and the other subscriber reaches the last.
	head := f.db.Seq()
	for i := 0; fastLast.Load() != head; i++ {
		if i > 6000 {
			t.Fatalf("the fast subscriber is at %d, the store at %d", fastLast.Load(), head)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitMetric(t, f, `incidentlib_subscriptions_dropped_total{reason="slow"}`, 1)
	// The slow one then reads what was buffered, and an error saying how
	// to resume.
	for {
		m := ws.read(t)
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
	if _, _, err := ws.c.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("after the slow error: %v", err)
	}
}

// TestSubscriptionLimits: per-client and total limits, as 429 over SSE and
// close 4429 over WebSocket.
func TestSubscriptionLimits(t *testing.T) {
	f := newLive(t, 5, server.Config{SubscriptionLimits: live.Options{MaxPerClient: 2, MaxTotal: 3}})
	a := mustSSE(t, f.hs.URL, nil)
	defer a.Close()
	b := mustSSE(t, f.hs.URL, nil)
	defer b.Close()
	if s, st, body := openSSE(t, f.hs.URL, nil, nil); s != nil || st != http.StatusTooManyRequests || errorCode(t, body) != incidentlib.ESUBSCRIPTIONLIMIT {
		t.Fatalf("third of a client: %d %s", st, body)
	}
	// Over WebSocket the same client's subscribe closes the connection
	// with 4429 (its token, which would make it another client, may come
	// in connection_init).
	same := dialWS(t, f.hs.URL, nil)
	defer same.Close(websocket.StatusNormalClosure, "")
	same.init(t, nil)
	same.subscribe(t, "1", nil)
	if _, _, err := same.c.Read(context.Background()); websocket.CloseStatus(err) != 4429 || !strings.Contains(err.Error(), incidentlib.ESUBSCRIPTIONLIMIT) {
		t.Fatalf("third of a client over WebSocket: %v", err)
	}
	// Another client (a token) gets one more: the total is 3, then 4429.
	tok := createToken(t, f, "lim")
	ws := dialWS(t, f.hs.URL, nil)
	defer ws.Close(websocket.StatusNormalClosure, "")
	ws.init(t, map[string]any{"Authorization": "Bearer " + tok})
	ws.subscribe(t, "1", nil)
	waitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	// The total is reached: an upgrade is refused with 429.
	_, resp, err := websocket.Dial(context.Background(), "ws"+f.hs.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("upgrade over the total: %v %v", err, resp)
	}
	ws.subscribe(t, "2", nil)
	_, _, err = ws.c.Read(context.Background())
	if websocket.CloseStatus(err) != 4429 || !strings.Contains(err.Error(), incidentlib.ESUBSCRIPTIONLIMIT) {
		t.Fatalf("over the total: %v", err)
	}
}

// TestSubscriptionShutdown: StopSubscriptions completes every stream, SSE
// and WebSocket, and WaitSubscriptions returns.
func TestSubscriptionShutdown(t *testing.T) {
	f := newLive(t, 5, server.Config{})
	s := mustSSE(t, f.hs.URL, nil)
	defer s.Close()
	ws := dialWS(t, f.hs.URL, nil)
	defer ws.Close(websocket.StatusNormalClosure, "")
	ws.init(t, nil)
	ws.subscribe(t, "op", nil)
	waitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	f.srv.StopSubscriptions()
	if _, code := s.event(t); code != "complete" {
		t.Fatalf("SSE ended with %q", code)
	}
	if m := ws.read(t); m.Type != "complete" || m.ID != "op" {
		t.Fatalf("%+v", m)
	}
	_, _, err := ws.c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("close %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.WaitSubscriptions(ctx); err != nil {
		t.Fatal(err)
	}
	// New ones are refused.
	if s, st, _ := openSSE(t, f.hs.URL, nil, nil); s != nil || st != http.StatusServiceUnavailable {
		t.Fatalf("after shutdown: %d", st)
	}
}

func TestSubscriptionWebSocket(t *testing.T) {
	f := newLive(t, 10, server.Config{CORSOrigins: []string{"https://app.example"}})
	t.Run("Events", func(t *testing.T) {
		ws := dialWS(t, f.hs.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.init(t, nil)
		ws.subscribe(t, "a", map[string]any{"f": map[string]any{"ids": []string{f.incs[2].ID}}})
		ws.subscribe(t, "b", nil)
		waitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 2)
		seq := f.write(t, 2, "ws two", "")
		got := map[string]liveEvent{}
		for len(got) < 2 {
			m := ws.read(t)
			if m.Type != "next" {
				t.Fatalf("%+v %s", m, m.Payload)
			}
			var r result
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
		ws.send(t, map[string]any{"id": "a", "type": "complete"})
		waitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
	})
	t.Run("SinceRefused", func(t *testing.T) {
		ws := dialWS(t, f.hs.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.init(t, nil)
		ws.subscribe(t, "x", map[string]any{"since": "99999999"})
		m := ws.read(t)
		if m.Type != "error" || m.ID != "x" || !strings.Contains(string(m.Payload), incidentlib.ESEQUENCEAHEAD) {
			t.Fatalf("%+v %s", m, m.Payload)
		}
	})
	t.Run("Origin", func(t *testing.T) {
		for origin, ok := range map[string]bool{"https://evil.example": false, "https://app.example": true, f.hs.URL: true} {
			h := http.Header{"Origin": {origin}}
			c, resp, err := websocket.Dial(context.Background(), "ws"+f.hs.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
			if ok != (err == nil) {
				t.Fatalf("%s: %v %v", origin, err, resp)
			}
			if c != nil {
				c.Close(websocket.StatusNormalClosure, "")
			}
		}
	})
	t.Run("BadToken", func(t *testing.T) {
		ws := dialWS(t, f.hs.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.send(t, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer il_nope"}})
		_, _, err := ws.c.Read(context.Background())
		if websocket.CloseStatus(err) != 4403 {
			t.Fatalf("%v", err)
		}
	})
}

// wsClient is a Go client of graphql-transport-ws.
type wsClient struct{ c *websocket.Conn }

type wsMsg struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

func dialWS(t testing.TB, url string, h http.Header) *wsClient {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), "ws"+url[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	return &wsClient{c}
}

func (w *wsClient) Close(code websocket.StatusCode, reason string) { w.c.Close(code, reason) }

func (w *wsClient) send(t testing.TB, m any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if err := w.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

func (w *wsClient) read(t testing.TB) wsMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m wsMsg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "ping" {
			w.send(t, map[string]any{"type": "pong"})
			continue
		}
		return m
	}
}

func (w *wsClient) init(t testing.TB, payload map[string]any) {
	t.Helper()
	w.send(t, map[string]any{"type": "connection_init", "payload": payload})
	if m := w.read(t); m.Type != "connection_ack" {
		t.Fatalf("%+v", m)
	}
}

func (w *wsClient) subscribe(t testing.TB, id string, vars map[string]any) {
	t.Helper()
	w.send(t, map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": liveDoc, "variables": vars}})
}

func metricValue(t testing.TB, f *liveFixture, name string) float64 {
	t.Helper()
	resp, err := http.Get(f.hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			x, _ := strconv.ParseFloat(v, 64)
			return x
		}
	}
	return -1
}

func waitMetric(t testing.TB, f *liveFixture, name string, want float64) {
	t.Helper()
	for range 500 {
		if metricValue(t, f, name) == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never reached %v (now %v)", name, want, metricValue(t, f, name))
}

func createToken(t testing.TB, f *liveFixture, name string) string {
	t.Helper()
	tok, _, err := f.db.CreateToken(context.Background(), name, incidentlib.RoleEditor, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestGraphiQLLiveTab runs GraphiQL's subscription example over SSE and
// sees a write arrive.
func TestGraphiQLLiveTab(t *testing.T) {
	f := newLive(t, 5, server.Config{})
	var tab *server.ExampleTab
	for _, x := range server.ExampleTabs() {
		if strings.Contains(x.Query, "subscription ") {
			tab = &x
		}
	}
	if tab == nil {
		t.Fatal("no subscription tab")
	}
	resp, err := http.DefaultClient.Do(ssePost(f.hs.URL, tab.Query))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	defer resp.Body.Close()
	f.write(t, 1, "from the tab", "")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !strings.Contains(d, `"title":"from the tab"`) || strings.Contains(d, `"errors"`) {
				t.Fatalf("%s", d)
			}
			return
		}
	}
	t.Fatal("no event")
}

// A subscription open while the server's reads become stale (a cluster
// node losing its quorum in the middle of a stream) marks each event sent
// while so with extensions.stale, and stops marking when it is level
// again, over SSE and over graphql-transport-ws.
func TestSubscriptionStaleMidStream(t *testing.T) {
	var stale atomic.Bool
	f := newLive(t, 10, server.Config{Stale: stale.Load})
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
		s := mustSSE(t, f.hs.URL, nil)
		defer s.Close()
		waitMetric(t, f, `incidentlib_subscriptions_active{transport="sse"}`, 1)
		for i, want := range []bool{false, true, false} {
			stale.Store(want)
			f.write(t, i, fmt.Sprintf("sse stale %d", i), "")
			_, data, err := s.next()
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
		c := dialWS(t, f.hs.URL, nil)
		defer c.Close(websocket.StatusNormalClosure, "")
		c.init(t, nil)
		c.subscribe(t, "1", nil)
		waitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
		for i, want := range []bool{false, true, false} {
			stale.Store(want)
			f.write(t, 5+i, fmt.Sprintf("ws stale %d", i), "")
			m := c.read(t)
			if m.Type != "next" {
				t.Fatalf("event %d: %s", i, m.Type)
			}
			if got := staleOfEvent(t, m.Payload); got != want {
				t.Fatalf("event %d: extensions.stale %v, want %v: %s", i, got, want, m.Payload)
			}
		}
	})
}
