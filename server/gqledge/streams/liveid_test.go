package streams_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
)

// adminToken is the --admin-token of the tests that need one.
const adminToken = "test-admin-token-0123456789"

// Identity per operation, not per connection (docs/subscriptions.md,
// "Tokens on open streams"): through the real handler, over loopback.

const historyDoc = `subscription { incidentChanged { seq incident { history { nodes { author { name } } } } } }`

const upsertDoc = `mutation($i: IncidentInput!) { upsertIncident(input: $i) { incident { id } userErrors { code } } }`

func upsertVars(id string) map[string]any {
	return map[string]any{"i": map[string]any{"id": id, "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x " + id}}}
}

// wsOp sends one operation on ws.
func wsOp(t testing.TB, ws *testutil.WSClient, id, query string, vars map[string]any) {
	t.Helper()
	ws.Send(t, map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
}

// payloadCode is the first error code of a next or error message's
// payload.
func payloadCode(t testing.TB, p json.RawMessage) string {
	t.Helper()
	var errs []struct{ Extensions map[string]any }
	if err := json.Unmarshal(p, &errs); err != nil {
		var r struct {
			Errors []struct{ Extensions map[string]any }
		}
		if err := json.Unmarshal(p, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		errs = r.Errors
	}
	if len(errs) == 0 {
		return ""
	}
	c, _ := errs[0].Extensions["code"].(string)
	return c
}

// wsClosed reads until the connection closes and returns its close code.
func wsClosed(t testing.TB, ws *testutil.WSClient) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		_, _, err := ws.C.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// wsUnauthorized: the connection's operation id gets an error message
// with UNAUTHENTICATED (next messages before it skipped), then the
// connection closes with 4401.
func wsUnauthorized(t testing.TB, ws *testutil.WSClient, id string) {
	t.Helper()
	for {
		m := ws.Read(t)
		if m.Type == "next" && m.ID == id {
			continue
		}
		if m.Type != "error" || m.ID != id || payloadCode(t, m.Payload) != incidentlib.EUNAUTHENTICATED {
			t.Fatalf("want an UNAUTHENTICATED error for %s: %+v %s", id, m, m.Payload)
		}
		break
	}
	if code := wsClosed(t, ws); code != 4401 {
		t.Fatalf("closed with %d, want 4401", code)
	}
}

// sseUnauthorized: the stream's next event carries UNAUTHENTICATED, then
// complete.
func sseUnauthorized(t testing.TB, s *testutil.SSEStream) {
	t.Helper()
	for {
		ev, code := s.Event(t)
		if code == "" && ev.Seq != "" {
			continue // an event sent before the token failed
		}
		if code != incidentlib.EUNAUTHENTICATED {
			t.Fatalf("SSE ended with %q, want UNAUTHENTICATED", code)
		}
		break
	}
	if _, code := s.Event(t); code != "complete" {
		t.Fatalf("after UNAUTHENTICATED: %q", code)
	}
}

// TestTokenJudgedPerOperation: a token revoked or expired while its
// WebSocket is open is refused on the connection's next operation (a
// mutation: nothing is written), with TokenRecheck far away, so that only
// the per-operation check can refuse it.
func TestTokenJudgedPerOperation(t *testing.T) {
	f := testutil.NewLive(t, 5, server.Config{Subscriptions: gqledge.LiveOptions{TokenRecheck: time.Hour}})
	for _, c := range []struct {
		name string
		// open returns the connection, opened with the token in the
		// upgrade's header or connection_init, and ends the token.
		open func(t *testing.T) (*testutil.WSClient, func())
	}{
		{"RevokedInit", func(t *testing.T) (*testutil.WSClient, func()) {
			tok := testutil.CreateToken(t, f, "rev-init")
			ws := testutil.DialWS(t, f.HS.URL, nil)
			ws.Init(t, map[string]any{"Authorization": "Bearer " + tok})
			return ws, func() {
				if _, err := f.DB.Tokens().RevokeToken(context.Background(), "rev-init"); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"RevokedHeader", func(t *testing.T) (*testutil.WSClient, func()) {
			tok := testutil.CreateToken(t, f, "rev-header")
			ws := testutil.DialWS(t, f.HS.URL, http.Header{"Authorization": {"Bearer " + tok}})
			ws.Init(t, nil)
			return ws, func() {
				if _, err := f.DB.Tokens().RevokeToken(context.Background(), "rev-header"); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"ExpiredHeader", func(t *testing.T) (*testutil.WSClient, func()) {
			expires := time.Now().Add(1500 * time.Millisecond)
			tok, _, err := f.DB.Tokens().CreateToken(context.Background(), "exp-header", incidentlib.RoleEditor, expires)
			if err != nil {
				t.Fatal(err)
			}
			ws := testutil.DialWS(t, f.HS.URL, http.Header{"Authorization": {"Bearer " + tok}})
			ws.Init(t, nil)
			return ws, func() { time.Sleep(time.Until(expires) + 10*time.Millisecond) }
		}},
		{"ExpiredInit", func(t *testing.T) (*testutil.WSClient, func()) {
			expires := time.Now().Add(1500 * time.Millisecond)
			tok, _, err := f.DB.Tokens().CreateToken(context.Background(), "exp-init", incidentlib.RoleEditor, expires)
			if err != nil {
				t.Fatal(err)
			}
			ws := testutil.DialWS(t, f.HS.URL, nil)
			ws.Init(t, map[string]any{"Authorization": "Bearer " + tok})
			return ws, func() { time.Sleep(time.Until(expires) + 10*time.Millisecond) }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, end := c.open(t)
			defer ws.Close(websocket.StatusNormalClosure, "")
			// The token works: its mutation writes.
			wsOp(t, ws, "w1", upsertDoc, upsertVars("IL-"+c.name+"-1"))
			if m := ws.Read(t); m.Type != "next" || payloadCode(t, m.Payload) != "" {
				t.Fatalf("%+v %s", m, m.Payload)
			}
			if m := ws.Read(t); m.Type != "complete" {
				t.Fatalf("%+v", m)
			}
			end()
			seq := f.DB.Incidents().Seq()
			wsOp(t, ws, "w2", upsertDoc, upsertVars("IL-"+c.name+"-2"))
			wsUnauthorized(t, ws, "w2")
			if f.DB.Incidents().Seq() != seq {
				t.Fatal("a mutation of a revoked or expired token wrote")
			}
		})
	}
}

// TestRevokeEndsOpenStreams: revoking a token (the revokeToken mutation,
// over HTTP) ends its open subscriptions that show history authors, SSE
// and WebSocket, before the revocation's response, with TokenRecheck far
// away; and an expired token's streams end within TokenRecheck.
func TestRevokeEndsOpenStreams(t *testing.T) {
	t.Run("Revoked", func(t *testing.T) {
		f := testutil.NewLive(t, 5, server.Config{AdminToken: adminToken, Subscriptions: gqledge.LiveOptions{TokenRecheck: time.Hour}})
		tok := testutil.CreateToken(t, f, "ed")
		ws := testutil.DialWS(t, f.HS.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Init(t, map[string]any{"Authorization": "Bearer " + tok})
		wsOp(t, ws, "h", historyDoc, nil)
		sse, st, b := openSSEDoc(t, f.HS.URL, historyDoc, http.Header{"Authorization": {"Bearer " + tok}})
		if sse == nil {
			t.Fatalf("%d %s", st, b)
		}
		defer sse.Close()
		testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, 1)
		testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="sse"}`, 1)
		// The token sees authors.
		f.Write(t, 1, "seen", "")
		if m := ws.Read(t); m.Type != "next" || !strings.Contains(string(m.Payload), `"author"`) {
			t.Fatalf("%+v %s", m, m.Payload)
		}
		if name, data, err := sse.Next(); err != nil || name != "next" || !strings.Contains(string(data), `"author"`) {
			t.Fatalf("%s %s %v", name, data, err)
		}
		r, err := http.NewRequest(http.MethodPost, f.HS.URL+"/graphql", strings.NewReader(`{"query":"mutation { revokeToken(name: \"ed\") { userErrors { code } } }"}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(r)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%v %v", err, resp)
		}
		resp.Body.Close()
		// A write after the revocation is never delivered to them.
		f.Write(t, 2, "unseen", "")
		wsUnauthorized(t, ws, "h")
		sseUnauthorized(t, sse)
	})
	t.Run("Expired", func(t *testing.T) {
		f := testutil.NewLive(t, 5, server.Config{Subscriptions: gqledge.LiveOptions{TokenRecheck: 100 * time.Millisecond}})
		tok, _, err := f.DB.Tokens().CreateToken(context.Background(), "soon", incidentlib.RoleEditor, time.Now().Add(1500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ws := testutil.DialWS(t, f.HS.URL, http.Header{"Authorization": {"Bearer " + tok}})
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Init(t, nil)
		wsOp(t, ws, "h", historyDoc, nil)
		sse, st, b := openSSEDoc(t, f.HS.URL, historyDoc, http.Header{"Authorization": {"Bearer " + tok}})
		if sse == nil {
			t.Fatalf("%d %s", st, b)
		}
		defer sse.Close()
		wsUnauthorized(t, ws, "h")
		sseUnauthorized(t, sse)
	})
}

// openSSEDoc is testutil.OpenSSE with another document.
func openSSEDoc(t testing.TB, url, doc string, header http.Header) (*testutil.SSEStream, int, []byte) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": doc})
	return testutil.OpenSSEBody(t, url, b, header)
}

// TestConnectionInitAuthorization: connection_init's Authorization is one
// member holding a string; two spellings of it, a value that is not a
// string or an empty one close the connection with 4400, never serving it
// as anonymous.
func TestConnectionInitAuthorization(t *testing.T) {
	f := testutil.NewLive(t, 3, server.Config{})
	tok := testutil.CreateToken(t, f, "init")
	for _, c := range []struct {
		name    string
		payload string
		code    websocket.StatusCode // 0: acknowledged
	}{
		{"Exact", `{"Authorization":"Bearer ` + tok + `"}`, 0},
		{"Lowercase", `{"authorization":"Bearer ` + tok + `"}`, 0},
		{"None", `{}`, 0},
		{"BothSpellings", `{"Authorization":"Bearer ` + tok + `","authorization":"Bearer il_other"}`, 4400},
		{"SameNameTwice", `{"Authorization":"Bearer il_other","Authorization":"Bearer ` + tok + `"}`, 4400},
		{"CaseVariantSecond", `{"authorization":"","AUTHORIZATION":"Bearer ` + tok + `"}`, 4400},
		{"Number", `{"Authorization":42}`, 4400},
		{"Null", `{"Authorization":null}`, 4400},
		{"Empty", `{"Authorization":""}`, 4400},
		{"Object", `{"Authorization":{"token":"x"}}`, 4400},
		{"BadToken", `{"Authorization":"Bearer il_nope"}`, 4403},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := testutil.DialWS(t, f.HS.URL, nil)
			defer ws.Close(websocket.StatusNormalClosure, "")
			if err := ws.C.Write(context.Background(), websocket.MessageText, []byte(`{"type":"connection_init","payload":`+c.payload+`}`)); err != nil {
				t.Fatal(err)
			}
			if c.code == 0 {
				if m := ws.Read(t); m.Type != "connection_ack" {
					t.Fatalf("%+v", m)
				}
				return
			}
			_, b, err := ws.C.Read(context.Background())
			if websocket.CloseStatus(err) != c.code {
				t.Fatalf("want close %d, got %v %s", c.code, err, b)
			}
		})
	}
}

// TestWebSocketTextMustBeUTF8: a text message that is not UTF-8 (a ping
// whose payload would be echoed in the pong) closes the connection with
// 1007; nothing is echoed.
func TestWebSocketTextMustBeUTF8(t *testing.T) {
	f := testutil.NewLive(t, 3, server.Config{})
	ws := testutil.DialWS(t, f.HS.URL, nil)
	defer ws.Close(websocket.StatusNormalClosure, "")
	ws.Init(t, nil)
	if err := ws.C.Write(context.Background(), websocket.MessageText, []byte("{\"type\":\"ping\",\"payload\":{\"x\":\"\xff\xfe\"}}")); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.C.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusInvalidFramePayloadData {
		t.Fatalf("want close 1007, got %v %q", err, b)
	}
}

// TestStreamsPerClient: a client holds at most MaxConnsPerClient streams
// open (WebSocket connections and SSE requests together), subscribing or
// not; past it 429 SUBSCRIPTION_LIMIT before any upgrade. A WebSocket
// that holds no subscription is closed after IdleTimeout, which frees its
// place.
func TestStreamsPerClient(t *testing.T) {
	f := testutil.NewLive(t, 3, server.Config{Subscriptions: gqledge.LiveOptions{MaxConnsPerClient: 2, IdleTimeout: 300 * time.Millisecond}})
	a := testutil.DialWS(t, f.HS.URL, nil)
	defer a.Close(websocket.StatusNormalClosure, "")
	a.Init(t, nil)
	b := testutil.MustSSE(t, f.HS.URL, nil)
	defer b.Close()
	_, resp, err := websocket.Dial(context.Background(), "ws"+f.HS.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third WebSocket: %v %v", err, resp)
	}
	if s, st, body := testutil.OpenSSE(t, f.HS.URL, nil, nil); s != nil || st != http.StatusTooManyRequests || testutil.ErrorCode(t, body) != incidentlib.ESUBSCRIPTIONLIMIT {
		t.Fatalf("a third SSE stream: %d %s", st, body)
	}
	// The idle WebSocket is closed, and its place is free again.
	if code := wsClosed(t, a); code != websocket.StatusNormalClosure {
		t.Fatalf("idle close %d", code)
	}
	for i := 0; ; i++ {
		c, _, err := websocket.Dial(context.Background(), "ws"+f.HS.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err == nil {
			c.Close(websocket.StatusNormalClosure, "")
			break
		}
		if i > 500 {
			t.Fatalf("no place after the idle close: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSubscribersShareTheEncoding: an event's encoding is written to each
// subscriber of the same selection as it is, never copied per subscriber,
// so that what n subscribers hold of an event they have not read yet is
// one encoding, not n. What the process allocates per event for n
// WebSocket and n SSE subscribers of large events, beyond what the same
// writes allocate without subscribers, stays under 1.5n times the
// event's size (about n/2 for the frames, deadlines and flushes of 2n
// streams); a copy per WebSocket subscriber adds n times its size.
func TestSubscribersShareTheEncoding(t *testing.T) {
	const n, events = 24, 24 // enough events that a collection in a round is a small part of each
	f := testutil.NewLive(t, 5, server.Config{})
	pad := strings.Repeat("a long summary ", 1300)
	size := uint64(len(pad))
	round := 0
	// perEvent is what the process allocates per write of a large event.
	perEvent := func(wait func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range events {
			inc := *f.Incs[i%len(f.Incs)]
			inc.Summary.En = fmt.Sprintf("%d %d %s", round, i, pad)
			inc.UpdatedAt, inc.Review = "", incidentlib.Review{}
			if _, err := f.DB.Incidents().UpsertIncident(context.Background(), &inc, incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		wait()
		runtime.ReadMemStats(&after)
		round++
		return (after.TotalAlloc - before.TotalAlloc) / events
	}
	perEvent(func() {}) // warms the store's pools up
	alone := perEvent(func() {})
	for range 2 { // the least of three: the writes' own cost, without the collector's noise
		alone = min(alone, perEvent(func() {}))
	}
	doc := `subscription { incidentChanged { seq incident { summary } } }`
	var got sync.WaitGroup
	for i := range n {
		ws := testutil.DialWS(t, f.HS.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Init(t, nil)
		wsOp(t, ws, "s", doc, nil)
		sse, st, b := openSSEDoc(t, f.HS.URL, doc, nil)
		if sse == nil {
			t.Fatalf("%d %s", st, b)
		}
		defer sse.Close()
		got.Add(2)
		go func() { // reads each message through one small buffer
			defer got.Done()
			buf := make([]byte, 4096)
			for seen := 0; seen < events; {
				_, r, err := ws.C.Reader(context.Background())
				if err != nil {
					t.Errorf("ws %d: %v", i, err)
					return
				}
				k, _ := io.ReadFull(r, buf[:16])
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
					t.Errorf("ws %d: %v", i, err)
					return
				}
				if bytes.Contains(buf[:k], []byte(`"id":"s"`)) {
					seen++
				}
			}
		}()
		go func() {
			defer got.Done()
			buf := make([]byte, 4096)
			for seen := 0; seen < events; {
				k, err := sse.Body().Read(buf)
				if err != nil {
					t.Errorf("sse %d: %v", i, err)
					return
				}
				seen += bytes.Count(buf[:k], []byte("event: next"))
			}
		}()
	}
	testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="ws"}`, n)
	testutil.WaitMetric(t, f, `incidentlib_subscriptions_active{transport="sse"}`, n)
	with := perEvent(got.Wait)
	t.Logf("per event of %d bytes: %d bytes allocated without subscribers, %d with %d", size, alone, with, 2*n)
	if with > alone && with-alone > 3*n*size/2 {
		t.Fatalf("%d subscribers allocated %d bytes per event of %d bytes: copies per subscriber", 2*n, with-alone, size)
	}
}

// TestRevokedTokenOnEveryStreamPath: every way a token reaches an
// operation over the stream transports refuses a revoked one, and none
// serves it as anonymous: SSE by POST and by GET (UNAUTHENTICATED in an
// event stream, gqledge/streams/refusal.go), the WebSocket
// upgrade's header (401), connection_init (close 4403), and a subscribe
// on a connection opened before the revocation (error UNAUTHENTICATED,
// close 4401; TestTokenJudgedPerOperation, TestRevokeEndsOpenStreams).
func TestRevokedTokenOnEveryStreamPath(t *testing.T) {
	f := testutil.NewLive(t, 3, server.Config{Subscriptions: gqledge.LiveOptions{TokenRecheck: time.Hour}})
	tok := testutil.CreateToken(t, f, "gone")
	open := testutil.DialWS(t, f.HS.URL, nil)
	defer open.Close(websocket.StatusNormalClosure, "")
	open.Init(t, map[string]any{"Authorization": "Bearer " + tok})
	if _, err := f.DB.Tokens().RevokeToken(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	bearer := http.Header{"Authorization": {"Bearer " + tok}}
	t.Run("SSEPost", func(t *testing.T) {
		s, st, b := testutil.OpenSSE(t, f.HS.URL, nil, bearer)
		if s == nil {
			t.Fatalf("%d %s", st, b)
		}
		if s.Header().Get("WWW-Authenticate") == "" {
			t.Error("no WWW-Authenticate")
		}
		if code := s.Refusal(t); code != incidentlib.EUNAUTHENTICATED {
			t.Fatalf("code %q", code)
		}
	})
	t.Run("SSEGet", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, f.HS.URL+"/graphql?"+url.Values{"query": {testutil.LiveDoc}}.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if testutil.StreamRefusal(t, resp.StatusCode, b) != incidentlib.EUNAUTHENTICATED {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("WebSocketHeader", func(t *testing.T) {
		_, resp, err := websocket.Dial(context.Background(), "ws"+f.HS.URL[4:]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: bearer})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%v %v", err, resp)
		}
	})
	t.Run("WebSocketInit", func(t *testing.T) {
		ws := testutil.DialWS(t, f.HS.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Send(t, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + tok}})
		if code := wsClosed(t, ws); code != 4403 {
			t.Fatalf("close %d", code)
		}
	})
	t.Run("WebSocketOpen", func(t *testing.T) {
		open.Subscribe(t, "late", nil)
		wsUnauthorized(t, open, "late")
	})
}

// TestStreamOptionsRefused: stream options that make no sense are
// refused when the server is built, never taken as "no limit".
func TestStreamOptionsRefused(t *testing.T) {
	db := testutil.ServerStore(t, nil, storage.Options{})
	for name, o := range map[string]gqledge.LiveOptions{
		"ConnsPerClient": {MaxConnsPerClient: -1},
		"TokenRecheck":   {TokenRecheck: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := testutil.ServerOn(db, server.Config{Subscriptions: o}, testutil.ServerParts{}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
