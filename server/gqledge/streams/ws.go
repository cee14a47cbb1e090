package streams

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// graphql-transport-ws (the protocol of the graphql-ws library) on
// /graphql: connection_init (whose payload may carry
// {"Authorization": "Bearer …"}, since browsers cannot set headers on a
// WebSocket), then subscribe / next / error / complete per operation id,
// ping and pong both ways. The upgrade checks Origin against the CORS
// allow-list (CORS does not protect WebSockets; a request without Origin
// is no browser's, and a page of this server's own origin is allowed).

const wsProtocol = "graphql-transport-ws"

// Close codes of the protocol, and ours.
const (
	closeBadMessage      websocket.StatusCode = 4400
	closeUnauthorized    websocket.StatusCode = 4401
	closeForbidden       websocket.StatusCode = 4403
	closeInitTimeout     websocket.StatusCode = 4408
	closeDuplicateID     websocket.StatusCode = 4409
	closeTooManyInits    websocket.StatusCode = 4429
	closeSubscriptionCap websocket.StatusCode = 4429 // SUBSCRIPTION_LIMIT
	closeSlow            websocket.StatusCode = 1013 // Try Again Later: a subscriber that fell behind its buffer
)

type wsTransport struct{ l *liveServer }

func (t wsTransport) Supports(r *http.Request) bool { return isWebSocket(r) }

func (t wsTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	t.l.serveWS(w, r, exec)
}

// originAllowed: no Origin (not a browser), this server's own origin, or
// one of --cors-origins.
func (l *liveServer) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if i := strings.Index(origin, "://"); i >= 0 && strings.EqualFold(origin[i+3:], r.Host) {
		return true
	}
	return l.e.OriginAllowed(origin)
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsConn is one WebSocket connection.
type wsConn struct {
	l      *liveServer
	c      *websocket.Conn
	exec   graphql.GraphExecutor
	r      *http.Request // with the identity of connection_init
	client string
	cred   *credential // the connection's token, judged per operation (auth.go)
	ctx    context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	ops  map[string]context.CancelFunc
	wg   sync.WaitGroup
	idle *time.Timer
}

func (l *liveServer) serveWS(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if !l.originAllowed(r) {
		sseRefuse(w, simpleRefusal(http.StatusForbidden, incidentlib.EFORBIDDEN, "this origin may not open a WebSocket here (--cors-origins)"))
		return
	}
	if !l.begin() {
		sseRefuse(w, simpleRefusal(http.StatusServiceUnavailable, incidentlib.EUNAVAILABLE, "the server is shutting down"))
		return
	}
	defer l.streams.Done()
	// A token in the upgrade's header is checked now; one in
	// connection_init when it comes.
	client := l.e.ClientKey(r)
	if r.Header.Get("Authorization") != "" || l.e.RateLimited() {
		ar, key, rf := l.admit(r)
		if rf != nil {
			sseRefuse(w, rf)
			return
		}
		r, client = ar, key
	}
	// Streams per client, by the upgrade's client (its token in the
	// header, else its address).
	held := client
	if rf := l.holdConn(held); rf != nil {
		sseRefuse(w, rf)
		return
	}
	defer l.dropConn(held)
	// The total now; a client's own limit when it subscribes (its token
	// may come in connection_init).
	if l.opts.Hub.Full("") {
		sseRefuse(w, simpleRefusal(http.StatusTooManyRequests, incidentlib.ESUBSCRIPTIONLIMIT, "the server holds as many subscriptions as it may"))
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{wsProtocol}, InsecureSkipVerify: true, // Origin checked above
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return // Accept answered the client
	}
	if c.Subprotocol() != wsProtocol {
		c.Close(websocket.StatusPolicyViolation, "the subprotocol must be "+wsProtocol)
		return
	}
	c.SetReadLimit(l.e.Limits().MaxBody)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	wc := &wsConn{l: l, c: c, exec: exec, r: r, client: client, ctx: ctx, cancel: cancel, ops: map[string]context.CancelFunc{}}
	code, reason := wc.serve()
	cancel()
	wc.wg.Wait()
	if wc.cred != nil {
		wc.cred.release()
	}
	if code != 0 {
		c.Close(code, reason)
	} else {
		_ = c.CloseNow() // the connection is over either way; no one acts on how it ended
	}
}

// closeAfter closes the connection with code once its operations have
// ended: the way the server ends a connection (shutdown, idle, init
// timeout) while the read loop waits for the client, which then ends.
func (wc *wsConn) closeAfter(code websocket.StatusCode, reason string) {
	wc.cancel()
	wc.wg.Wait()
	wc.c.Close(code, reason)
}

// serve runs the connection's read loop until it ends; it returns the
// close code to send (0: the connection is closed already).
func (wc *wsConn) serve() (websocket.StatusCode, string) {
	l := wc.l
	stop := make(chan struct{})
	defer close(stop)
	// Shutdown: every operation completes, then the connection closes as
	// going away.
	go func() {
		select {
		case <-l.stop:
			wc.closeAfter(websocket.StatusGoingAway, "the server is shutting down")
		case <-stop:
		}
	}()
	// connection_init first, within InitTimeout.
	initTimer := time.AfterFunc(l.opts.InitTimeout, func() { wc.closeAfter(closeInitTimeout, "Connection initialisation timeout") })
	msg, err := wc.read()
	initTimer.Stop()
	if errors.Is(err, errBadUTF8) {
		return websocket.StatusInvalidFramePayloadData, "a text message must be UTF-8"
	}
	if err != nil {
		return 0, ""
	}
	if msg.Type != "connection_init" {
		if msg.Type == "subscribe" {
			return closeUnauthorized, "Unauthorized"
		}
		return closeBadMessage, "the first message must be connection_init"
	}
	if code, reason := wc.init(msg.Payload); code != 0 {
		return code, reason
	}
	// From now on the connection's token is judged again for each
	// operation, every TokenRecheck, and after a token is revoked here:
	// once it fails, each operation gets an error message and the
	// connection closes with 4401.
	wc.cred = l.newCredential(context.WithoutCancel(wc.r.Context()), wc.r, wc.r.Header.Get("Authorization"))
	unwatch := context.AfterFunc(wc.cred.ctx, func() {
		if err := wc.cred.failed(); err != nil {
			wc.closeAfter(closeUnauthorized, clip("Unauthorized: "+incidentlib.ErrorMessage(err), 120))
		}
	})
	defer unwatch()
	if err := wc.send(&wsMessage{Type: "connection_ack"}); err != nil {
		return 0, ""
	}
	var pingMu sync.Mutex
	var ping *time.Timer
	pingMu.Lock()
	ping = time.AfterFunc(l.opts.KeepAlive, func() {
		pingMu.Lock()
		t := ping
		pingMu.Unlock()
		if wc.send(&wsMessage{Type: "ping"}) == nil {
			t.Reset(l.opts.KeepAlive)
		}
	})
	pingMu.Unlock()
	defer ping.Stop()
	wc.mu.Lock()
	wc.idle = time.AfterFunc(l.opts.IdleTimeout, func() {
		wc.closeAfter(websocket.StatusNormalClosure, "idle: no subscription for "+l.opts.IdleTimeout.String())
	})
	wc.mu.Unlock()
	defer wc.idle.Stop()
	for {
		msg, err := wc.read()
		if errors.Is(err, errBadUTF8) {
			return websocket.StatusInvalidFramePayloadData, "a text message must be UTF-8"
		}
		if err != nil {
			return 0, ""
		}
		switch msg.Type {
		case "ping":
			if wc.send(&wsMessage{Type: "pong", Payload: msg.Payload}) != nil {
				return 0, ""
			}
		case "pong":
		case "connection_init":
			return closeTooManyInits, "Too many initialisation requests"
		case "subscribe":
			if msg.ID == "" {
				return closeBadMessage, "a subscribe message needs an id"
			}
			if code, reason := wc.subscribe(msg.ID, msg.Payload); code != 0 {
				return code, reason
			}
		case "complete":
			wc.mu.Lock()
			if cancel, ok := wc.ops[msg.ID]; ok {
				cancel()
			}
			wc.mu.Unlock()
		default:
			return closeBadMessage, "unknown message type"
		}
	}
}

func (l *liveServer) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}

// subscribe starts operation id.
func (wc *wsConn) subscribe(id string, payload json.RawMessage) (websocket.StatusCode, string) {
	params, rerr := gqledge.DecodeBody(payload)
	wc.mu.Lock()
	_, dup := wc.ops[id]
	wc.mu.Unlock()
	if dup {
		return closeDuplicateID, "Subscriber for " + clip(id, 64) + " already exists"
	}
	if rerr != nil {
		_ = wc.sendErrors(id, gqlerror.List{refusalError(gqledge.CodeBadRequest, rerr.Error())})
		return 0, ""
	}
	// Each operation runs as the token is now, not as it was at
	// connection_init: a revoked or expired token's operation is refused
	// (its error message, then close 4401) and nothing runs.
	r, err := wc.cred.reauthenticate()
	if err != nil {
		_ = wc.sendErrors(id, gqlerror.List{wc.l.e.PresentError(wc.ctx, err)})
		wc.cred.fail(err) // the other operations end, then close 4401
		return 0, ""
	}
	s, rf := wc.l.start(r.Context(), wc.exec, &params, wc.client)
	if rf != nil {
		if code := codeOf(rf.errs); closeOf(code) != 0 {
			return closeOf(code), clip(code+": "+rf.errs[0].Message, 120)
		}
		_ = wc.sendErrors(id, rf.errs)
		return 0, ""
	}
	if s.once != nil {
		b, _ := json.Marshal(s.once)
		if wc.send(&wsMessage{ID: id, Type: "next", Payload: b}) == nil {
			_ = wc.send(&wsMessage{ID: id, Type: "complete"})
		}
		return 0, ""
	}
	octx, cancel := context.WithCancel(wc.ctx)
	wc.mu.Lock()
	wc.ops[id] = cancel
	wc.idle.Stop()
	wc.mu.Unlock()
	wc.wg.Add(1)
	go wc.run(octx, id, s)
	return 0, ""
}

func (wc *wsConn) sendErrors(id string, errs gqlerror.List) error {
	b, _ := json.Marshal(errs)
	return wc.send(&wsMessage{ID: id, Type: "error", Payload: b})
}

// run writes the events of operation id until it ends.
func (wc *wsConn) run(ctx context.Context, id string, s *stream) {
	l := wc.l
	defer wc.wg.Done()
	defer s.sub.Close()
	l.m.active.WithLabelValues("ws").Inc()
	defer l.m.active.WithLabelValues("ws").Dec()
	defer func() {
		wc.mu.Lock()
		delete(wc.ops, id)
		if len(wc.ops) == 0 {
			wc.idle.Reset(l.opts.IdleTimeout)
		}
		wc.mu.Unlock()
	}()
	idJSON, _ := json.Marshal(id)
	for {
		it, err := s.sub.Next(ctx)
		switch {
		case errors.Is(err, live.ErrClosed):
			_ = wc.send(&wsMessage{ID: id, Type: "complete"})
			return
		case err != nil:
			if ferr := wc.cred.failed(); ferr != nil {
				_ = wc.sendErrors(id, gqlerror.List{l.e.PresentError(s.ctx, ferr)})
				return
			}
			if ctx.Err() != nil {
				if l.isStopped() {
					_ = wc.send(&wsMessage{ID: id, Type: "complete"})
				}
				return // completed by the client, or the connection ended
			}
			_ = wc.sendErrors(id, gqlerror.List{l.e.PresentError(s.ctx, err)})
			if r := s.sub.Reason(); r == live.ReasonSlow {
				// A client that fell behind one operation's buffer reads
				// none of the connection's: the whole connection goes,
				// with what it holds, as soon as the error is written
				// (or its write timed out). 1013: resume with since.
				go wc.closeAfter(closeSlow, "the client fell behind: subscribe again with since")
			}
			return
		}
		b, ok := s.payload(ctx, it)
		if !ok || ctx.Err() != nil || wc.cred.failed() != nil {
			continue // the token failed meanwhile (or the operation ended): never sent
		}
		// The event's encoding is shared by every subscriber of the
		// selection: it is written as it is, around it the message's
		// members, never copied per subscriber (a subscriber that reads
		// slowly holds no copy of what it has not read).
		prefix := make([]byte, 0, len(idJSON)+32)
		prefix = append(prefix, `{"id":`...)
		prefix = append(prefix, idJSON...)
		prefix = append(prefix, `,"type":"next","payload":`...)
		if wc.writeParts(prefix, b, []byte{'}'}) != nil {
			wc.cancel()
			return
		}
		l.m.sent.WithLabelValues("ws").Inc()
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
