// Package streams holds the subscription transports of the GraphQL edge:
// GraphQL over SSE (sse.go) and graphql-transport-ws (ws.go, wsframes.go)
// on /graphql, the tokens of open streams judged again while they live
// (auth.go), their metrics (metrics.go) and the close codes of the one
// table (closecodes.go). It serves the hub of live/ (the store's changes)
// and reaches the edge only through gqledge's seam (gqledge/streaming.go):
// the edge's guard authenticates, rate-limits and bounds a stream as it
// does a query. server.New hands New to the edge (gqledge.Options.NewStreams).
package streams

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/live"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/tracing"
)

// Subscriptions at the edge: GraphQL over SSE (sse.go, the
// distinct-connections mode of graphql-sse) and graphql-transport-ws
// (ws.go), both on /graphql. They are thin transports of our own
// rather than gqlgen's transport.SSE and transport.Websocket because
// those execute every event for every subscriber, cannot refuse a
// subscription before any event with an HTTP status (they answer 200 and
// an error event), and hold no per-subscriber buffer: here the hub
// (live/) hands each subscriber its events through a bounded buffer, each
// event's selection is executed by gqlgen's executor once per distinct
// selection (live.Event.Encoded) and written by every subscriber that has
// it. Parsing, validation, the document and cost limits, the rate limit,
// tokens and the error presenter are the same as for queries: the
// operation is created and dispatched by gqlgen's executor with the
// edge's extensions.

// liveServer serves the subscription transports.
type liveServer struct {
	e    *gqledge.Edge
	opts gqledge.LiveOptions
	m    *liveMetrics

	mu      sync.Mutex
	streams sync.WaitGroup
	stop    chan struct{} // closed by stopAll
	stopped bool
	conns   map[string]int // open streams by client, under mu

	creds credentials // the open streams' tokens (auth.go)
}

// New makes the subscription transports of e with opts (their defaults
// applied by the edge): gqledge.Options.NewStreams.
func New(e *gqledge.Edge, opts gqledge.LiveOptions) (gqledge.Streams, error) {
	m, err := newLiveMetrics(e.Registerer(), opts.Hub)
	if err != nil {
		return nil, err
	}
	return &liveServer{e: e, opts: opts, m: m, stop: make(chan struct{}), conns: map[string]int{}}, nil
}

var _ gqledge.StreamsMaker = New

func (l *liveServer) Transports() []graphql.Transport {
	return []graphql.Transport{wsTransport{l}, sseTransport{l}}
}

func (l *liveServer) Extension() graphql.HandlerExtension { return tokenWatch{l} }

func (l *liveServer) Serves(r *http.Request) bool { return isLive(r) }

func (l *liveServer) Stop() { l.stopAll() }

func (l *liveServer) Wait(ctx context.Context) error { return l.wait(ctx) }

// isLive says whether r asks for a stream: a WebSocket upgrade or an SSE
// request.
func isLive(r *http.Request) bool {
	return isWebSocket(r) || isSSE(r)
}

func isWebSocket(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func isSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// begin counts a stream, or refuses it once the server shuts down.
func (l *liveServer) begin() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.streams.Add(1)
	return true
}

// holdConn counts one more open stream of client, or refuses it past
// MaxConnsPerClient; dropConn uncounts it.
func (l *liveServer) holdConn(client string) *liveRefusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[client] >= l.opts.MaxConnsPerClient {
		l.m.refused.WithLabelValues(refusedLabel(incidentlib.ESUBSCRIPTIONLIMIT)).Inc()
		return simpleRefusal(http.StatusTooManyRequests, incidentlib.ESUBSCRIPTIONLIMIT,
			fmt.Sprintf("the client holds %d streams open, as many as it may (--subscription-conns-per-client)", l.opts.MaxConnsPerClient))
	}
	l.conns[client]++
	return nil
}

func (l *liveServer) dropConn(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[client]--; l.conns[client] <= 0 {
		delete(l.conns, client)
	}
}

// stopAll ends every stream with a completion and refuses new ones.
func (l *liveServer) stopAll() {
	l.mu.Lock()
	if !l.stopped {
		l.stopped = true
		close(l.stop)
	}
	l.mu.Unlock()
	l.opts.Hub.Close()
}

// wait waits until every stream has ended, or ctx.
func (l *liveServer) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { l.streams.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refusal is a subscription refused before any event: the presented
// errors and the HTTP status of an SSE request.
type liveRefusal struct {
	status int
	header http.Header
	errs   gqlerror.List
}

// statusOfCode is the HTTP status of a stream refused with code: the one
// table's (incidentlib.StatusOf); the edge's own codes (limits, a
// document that does not parse or validate) are 400 unless the refusal
// set its status (a rate limit's 429).
func statusOfCode(code string) int {
	if st, ok := incidentlib.StatusOf(code); ok {
		return st.HTTP
	}
	if code == gqledge.CodeRateLimited {
		return http.StatusTooManyRequests
	}
	return http.StatusBadRequest
}

func codeOf(errs gqlerror.List) string {
	for _, e := range errs {
		if c, ok := e.Extensions["code"].(string); ok {
			return c
		}
	}
	return ""
}

// stream is one started operation of a stream.
type stream struct {
	l         *liveServer
	ctx       context.Context // the operation's
	op        *gqledge.StreamOp
	responses graphql.ResponseHandler
	sub       *live.Subscription // nil for a query or mutation
	st        *graph.LiveStart
	key       string // the selection's key for shared encodings
	// once is the answer of an operation that is not a subscription.
	once *graphql.Response
}

// start creates and dispatches the operation of params for client, in
// ctx (the request's, with its identity and language): a stream, or the
// refusal to answer before any event.
func (l *liveServer) start(ctx context.Context, exec graphql.GraphExecutor, params *graphql.RawParams, client string) (*stream, *liveRefusal) {
	ctx, op := gqledge.WithStreamOp(ctx, client, time.Now().Add(l.e.Limits().RequestTimeout))
	params.ReadTime = graphql.TraceTiming{Start: graphql.Now(), End: graphql.Now()}
	rc, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		return nil, l.refused(op, resp.Errors)
	}
	s := &stream{l: l, op: op}
	st := &graph.LiveStart{Events: make(chan *model.IncidentChange, 1)}
	var startErr error
	st.Start = func(ctx context.Context, f *incidentlib.IncidentFilter, since *string) error {
		sctx, cancel := context.WithDeadline(ctx, op.Deadline())
		defer cancel()
		s.sub, startErr = l.opts.Hub.Subscribe(sctx, client, f, since)
		return startErr
	}
	s.st = st
	s.responses, s.ctx = exec.DispatchOperation(graph.WithLiveStart(ctx, st), rc)
	if rc.Operation.Operation != ast.Subscription {
		s.once = s.responses(s.ctx)
		return s, nil
	}
	if s.sub == nil {
		// Refused: the resolver's error (or the operation's) is the first
		// and only response.
		resp := s.responses(s.ctx)
		var errs gqlerror.List
		if resp != nil {
			errs = resp.Errors
		}
		if len(errs) == 0 {
			errs = gqlerror.List{l.e.PresentError(ctx, incidentlib.Errorf(incidentlib.EINTERNAL, "the subscription did not start"))}
		}
		return nil, l.refused(op, errs)
	}
	s.key = selectionKey(ctx, rc)
	return s, nil
}

func (l *liveServer) refused(op *gqledge.StreamOp, errs gqlerror.List) *liveRefusal {
	code := codeOf(errs)
	l.m.refused.WithLabelValues(refusedLabel(code)).Inc()
	status := op.Status()
	if status == 0 {
		status = statusOfCode(code)
	}
	return &liveRefusal{status: status, header: op.Header(), errs: errs}
}

// refusedLabel bounds the label set of the refusals' metric.
func refusedLabel(code string) string {
	switch code {
	case incidentlib.EBADREQUEST, incidentlib.ESEQUENCEAHEAD, incidentlib.ESEQUENCECOMPACTED, incidentlib.ESUBSCRIPTIONLIMIT,
		incidentlib.EUNAUTHENTICATED, incidentlib.EFORBIDDEN, incidentlib.EINVALID, gqledge.CodeRateLimited, gqledge.CodeCostLimit, incidentlib.EUNAVAILABLE:
		return code
	}
	return "OTHER"
}

// selectionKey names what an event's answer depends on beside the event:
// the document, the operation, the variables (the filter among them, so
// matchesFilter too), the language and the caller's role.
func selectionKey(ctx context.Context, rc *graphql.OperationContext) string {
	h := sha256.New()
	vars, _ := json.Marshal(rc.Variables) // map keys sorted
	id, _ := incidentlib.IdentityFrom(ctx)
	for _, part := range []string{rc.RawQuery, rc.OperationName, string(vars), string(graph.LangFrom(ctx)), strconv.Itoa(int(id.Role))} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// payload is it as the payload of a next message: its encoding, or the
// presented error when it cannot be encoded. ok is false when ctx ended
// meanwhile (the client went away: nothing more is sent).
func (s *stream) payload(ctx context.Context, it live.Item) (b []byte, ok bool) {
	b, err := s.encode(it)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		b = s.errorPayload(err)
	}
	return b, true
}

// errorPayload is the payload of a next message that carries err,
// presented.
func (s *stream) errorPayload(err error) []byte {
	b, _ := json.Marshal(requestErrors{Errors: gqlerror.List{s.l.e.PresentError(s.ctx, err)}})
	return b
}

// encode returns the JSON of the execution result of it (an object with
// data, and errors or extensions where there are any), executed once per
// distinct selection and event, under --request-timeout.
func (s *stream) encode(it live.Item) ([]byte, error) {
	key := s.key
	if it.Matches {
		key += "+"
	}
	return it.Event.Encoded(key, func() ([]byte, error) {
		timeout := s.l.e.Limits().RequestTimeout
		ctx, release := s.l.opts.EventContext(s.ctx)
		defer release()
		ctx, span := tracing.EventSpan(ctx)
		defer span.End()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		s.op.SetDeadline(time.Now().Add(timeout))
		s.st.Events <- s.l.opts.ChangeOf(ctx, &it.Event.Change, it.Matches)
		resp := s.responses(ctx)
		select {
		case <-s.st.Events: // not taken: the execution ended first
		default:
		}
		if resp == nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, errors.New("the subscription's executor ended")
		}
		return json.Marshal(resp)
	})
}
