package streams

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// GraphQL over SSE, the distinct-connections mode of the graphql-sse
// protocol: one operation per request (POST with a JSON body, or GET with
// the query string), answered with text/event-stream: `next` events with
// execution results, then `complete`. A refusal before any event is a
// `next` event with {"errors": [...]} then `complete` (livesserefusal.go),
// or, for one a retry may cure (429, 5xx), an HTTP error status with that
// JSON body.

// sseTransport is the gqlgen transport of SSE requests.
type sseTransport struct{ l *liveServer }

func (t sseTransport) Supports(r *http.Request) bool { return isSSE(r) && !isWebSocket(r) }

func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	t.l.serveSSE(w, r, exec)
}

// sseRefuse answers a refusal as JSON.
func sseRefuse(w http.ResponseWriter, rf *liveRefusal) {
	for k, vs := range rf.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rf.status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", gqledge.WWWAuthenticate)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rf.status)
	b, _ := json.Marshal(requestErrors{Errors: rf.errs})
	_, _ = w.Write(b)
}

// requestErrors is the body of a refusal, {"errors": [...]}, as the edge
// writes a request error.
type requestErrors struct {
	Errors gqlerror.List `json:"errors"`
}

func simpleRefusal(status int, code, msg string) *liveRefusal {
	return &liveRefusal{status: status, errs: gqlerror.List{refusalError(code, msg)}}
}

func refusalError(code, msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}
}

// admit authenticates r and applies the rate limit's admission: the
// request with its identity and the client's key, or the refusal.
func (l *liveServer) admit(r *http.Request) (*http.Request, string, *liveRefusal) {
	if authenticate := l.e.Authenticator(); authenticate != nil {
		ar, err := authenticate(r)
		if err != nil {
			return nil, "", simpleRefusal(http.StatusUnauthorized, incidentlib.EUNAUTHENTICATED, incidentlib.ErrorMessage(err))
		}
		r = ar
	}
	client := l.e.ClientKey(r)
	if ok, retry := l.e.AdmitRate(client); !ok {
		rf := simpleRefusal(http.StatusTooManyRequests, gqledge.CodeRateLimited, "too many requests: the client has used its cost per second")
		rf.header = http.Header{"Retry-After": {retry}}
		return nil, "", rf
	}
	return r, client, nil
}

func (l *liveServer) serveSSE(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if !l.begin() {
		sseRefuse(w, simpleRefusal(http.StatusServiceUnavailable, incidentlib.EUNAVAILABLE, "the server is shutting down"))
		return
	}
	defer l.streams.Done()
	r, client, rf := l.admit(r)
	if rf == nil {
		rf = l.holdConn(client)
	}
	if rf != nil {
		sseRefuseOperation(w, rf)
		return
	}
	defer l.dropConn(client)
	// The stream's token is judged again while it lives (auth.go).
	cred := l.newCredential(r.Context(), r, r.Header.Get("Authorization"))
	defer cred.release()
	var params graphql.RawParams
	var rerr error
	switch r.Method {
	case http.MethodGet:
		params, rerr = gqledge.DecodeQuery(r.URL.RawQuery)
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, l.e.Limits().MaxBody))
		if err != nil {
			sseRefuse(w, simpleRefusal(http.StatusRequestEntityTooLarge, gqledge.CodeBodyTooLarge, "the request body could not be read or is too large"))
			return
		}
		params, rerr = gqledge.DecodeBody(body)
	default:
		w.Header().Set("Allow", "GET, POST")
		sseRefuse(w, simpleRefusal(http.StatusMethodNotAllowed, gqledge.CodeMethodNotAllowed, "subscribe over SSE with POST or GET"))
		return
	}
	if rerr != nil {
		sseRefuseOperation(w, &liveRefusal{status: http.StatusBadRequest, errs: gqlerror.List{refusalError(gqledge.CodeBadRequest, rerr.Error())}})
		return
	}
	s, rf := l.start(r.Context(), exec, &params, client)
	if rf != nil {
		sseRefuseOperation(w, rf)
		return
	}
	rc := http.NewResponseController(w)
	// A stream is exempt from the server's whole-request timeouts: no
	// read deadline, and a deadline per write.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &sseWriter{w: w, rc: rc, timeout: l.opts.WriteTimeout}
	if s.once != nil {
		b, _ := json.Marshal(s.once)
		_ = out.event("next", b)
		_ = out.event("complete", nil)
		return
	}
	defer s.sub.Close()
	l.m.active.WithLabelValues("sse").Inc()
	defer l.m.active.WithLabelValues("sse").Dec()
	if out.flush() != nil {
		return
	}
	tick := time.NewTicker(l.opts.KeepAlive)
	defer tick.Stop()
	ctx := cred.ctx
	for {
		it, ticked, err := s.sub.NextOr(ctx, tick.C)
		switch {
		case ticked:
			if out.comment() != nil {
				return
			}
			continue
		case errors.Is(err, live.ErrClosed):
			_ = out.event("complete", nil)
			return
		case err != nil:
			if ferr := cred.failed(); ferr != nil {
				// The token was revoked or expired: the refusal, then
				// the end.
				_ = out.event("next", s.errorPayload(ferr))
				_ = out.event("complete", nil)
				return
			}
			if ctx.Err() != nil {
				return // the client went away
			}
			_ = out.event("next", s.errorPayload(err))
			_ = out.event("complete", nil)
			return
		}
		b, ok := s.payload(ctx, it)
		if !ok || ctx.Err() != nil {
			continue // the token failed meanwhile (or the client went away): never sent
		}
		if out.event("next", b) != nil {
			return
		}
		l.m.sent.WithLabelValues("sse").Inc()
	}
}

// sseWriter writes events, each under its own write deadline. An
// event's data (an encoding shared by every subscriber of the selection)
// is written as it is, never copied into a buffer of the stream's: a
// subscriber that reads slowly holds no copy of what it has not read.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (o *sseWriter) event(name string, data []byte) error {
	return o.write([]byte("event: "+name+"\ndata: "), data /* JSON without newlines */, []byte("\n\n"))
}

func (o *sseWriter) comment() error {
	return o.write([]byte(":\n\n"))
}

func (o *sseWriter) write(parts ...[]byte) error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	for _, p := range parts {
		if _, err := o.w.Write(p); err != nil {
			return err
		}
	}
	return o.flush()
}

func (o *sseWriter) flush() error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	return o.rc.Flush()
}

var _ = context.Background
