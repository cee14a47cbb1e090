package testutil

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// Subscriptions through the real handler, over loopback, with Go clients
// of both transports (the JavaScript clients run in e2e/): the fixture, a
// client of GraphQL over SSE and one of graphql-transport-ws, shared by
// the subscription transports' tests (server/gqledge/streams) and the
// server's.

// LiveDoc is the subscription the clients send by default.
const LiveDoc = `subscription($f: IncidentFilter, $since: String) {
  incidentChanged(filter: $f, since: $since) { seq action incidentId matchesFilter incident { id title severity { slug } } }
}`

type LiveEvent struct {
	Seq           string
	Action        string
	ID            string `json:"incidentId"`
	MatchesFilter bool
	Incident      *struct {
		ID       string
		Title    string
		Severity *struct{ Slug string }
	}
}

// LiveFixture is a store of n generated incidents served with
// subscriptions (NewLive).
type LiveFixture struct {
	DB   *storage.DB
	HS   *httptest.Server
	Srv  *server.Server
	Incs []*incidentlib.Incident
}

func NewLive(t testing.TB, n int, cfg server.Config) *LiveFixture {
	t.Helper()
	incs, err := gen.Generate(gen.Options{Count: n, Seed: 7, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	db := ServerStore(t, incs, storage.Options{})
	hs, srv := ServerTest(t, db, cfg, ServerParts{})
	t.Cleanup(srv.StopSubscriptions) // before the server closes
	return &LiveFixture{DB: db, HS: hs, Srv: srv, Incs: incs}
}

// Write changes incident i's title (and severity when sev is set) and
// returns the store's sequence after it.
func (f *LiveFixture) Write(t testing.TB, i int, title, sev string) uint64 {
	t.Helper()
	inc := *f.Incs[i%len(f.Incs)]
	inc.Title.En = title
	if sev != "" {
		inc.Severity = sev
	}
	inc.UpdatedAt = ""
	inc.Review = incidentlib.Review{}
	if _, err := f.DB.Incidents().UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return f.DB.Incidents().Seq()
}

// SSEStream is a Go client of GraphQL over SSE.
type SSEStream struct {
	resp *http.Response
	sc   *bufio.Scanner
	stop context.CancelFunc
}

func SSEBody(vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": LiveDoc, "variables": vars})
	return b
}

// OpenSSE starts a subscription to LiveDoc with vars; a refusal returns
// the response's status and body.
func OpenSSE(t testing.TB, url string, vars map[string]any, header http.Header) (*SSEStream, int, []byte) {
	t.Helper()
	return OpenSSEBody(t, url, SSEBody(vars), header)
}

// OpenSSEBody is OpenSSE with the request body body (another document).
func OpenSSEBody(t testing.TB, url string, body []byte, header http.Header) (*SSEStream, int, []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body))
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
	return &SSEStream{resp: resp, sc: sc, stop: cancel}, http.StatusOK, nil
}

// MustSSE starts a subscription that must not be refused.
func MustSSE(t testing.TB, url string, vars map[string]any) *SSEStream {
	t.Helper()
	s, st, b := OpenSSE(t, url, vars, nil)
	if s == nil {
		t.Fatalf("refused: %d %s", st, b)
	}
	return s
}

func (s *SSEStream) Close() { s.stop(); s.resp.Body.Close() }

// Body is the stream's raw body, for a test that reads its bytes itself
// rather than its events.
func (s *SSEStream) Body() io.Reader { return s.resp.Body }

// Next returns the next event's name and data (keep-alive comments
// skipped); io.EOF at the end of the stream.
func (s *SSEStream) Next() (string, []byte, error) {
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

// LiveResult is an execution result of LiveDoc.
type LiveResult struct {
	Data struct {
		IncidentChanged LiveEvent
	}
	Errors []struct {
		Message    string
		Extensions map[string]any
	}
}

// Event returns the next change, or the code of an error event, or
// "complete".
func (s *SSEStream) Event(t testing.TB) (LiveEvent, string) {
	t.Helper()
	ev, code, err := s.EventOrEnd(t)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	return ev, code
}

// EventOrEnd is Event, with the error that ended the stream.
func (s *SSEStream) EventOrEnd(t testing.TB) (LiveEvent, string, error) {
	t.Helper()
	name, data, err := s.Next()
	if err != nil {
		return LiveEvent{}, "", err
	}
	ev, code := DecodeEvent(t, name, data)
	return ev, code, nil
}

func DecodeEvent(t testing.TB, name string, data []byte) (LiveEvent, string) {
	t.Helper()
	if name == "complete" {
		return LiveEvent{}, "complete"
	}
	var r LiveResult
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if len(r.Errors) > 0 {
		code, _ := r.Errors[0].Extensions["code"].(string)
		return LiveEvent{}, code
	}
	return r.Data.IncidentChanged, ""
}

func ErrorCode(t testing.TB, b []byte) string {
	t.Helper()
	var r LiveResult
	if err := json.Unmarshal(b, &r); err != nil || len(r.Errors) == 0 {
		t.Fatalf("not a refusal: %s", b)
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

// WSClient is a Go client of graphql-transport-ws.
type WSClient struct{ C *websocket.Conn }

type WSMsg struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

func DialWS(t testing.TB, url string, h http.Header) *WSClient {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), "ws"+url[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	return &WSClient{c}
}

func (w *WSClient) Close(code websocket.StatusCode, reason string) { w.C.Close(code, reason) }

func (w *WSClient) Send(t testing.TB, m any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if err := w.C.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

func (w *WSClient) Read(t testing.TB) WSMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		_, b, err := w.C.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m WSMsg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "ping" {
			w.Send(t, map[string]any{"type": "pong"})
			continue
		}
		return m
	}
}

func (w *WSClient) Init(t testing.TB, payload map[string]any) {
	t.Helper()
	w.Send(t, map[string]any{"type": "connection_init", "payload": payload})
	if m := w.Read(t); m.Type != "connection_ack" {
		t.Fatalf("%+v", m)
	}
}

func (w *WSClient) Subscribe(t testing.TB, id string, vars map[string]any) {
	t.Helper()
	w.Send(t, map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": LiveDoc, "variables": vars}})
}

// MetricValue is the sample name of f's /metrics, -1 if it has none.
func MetricValue(t testing.TB, f *LiveFixture, name string) float64 {
	t.Helper()
	resp, err := http.Get(f.HS.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v, ok, _ := sampleOf(b, name); ok {
		return v
	}
	return -1
}

func WaitMetric(t testing.TB, f *LiveFixture, name string, want float64) {
	t.Helper()
	for range 500 {
		if MetricValue(t, f, name) == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never reached %v (now %v)", name, want, MetricValue(t, f, name))
}

func CreateToken(t testing.TB, f *LiveFixture, name string) string {
	t.Helper()
	return APIToken(t, f.DB, name, incidentlib.RoleEditor)
}
