package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/tracing"
)

// serveTraced runs serve with env and extra args, calls send with its
// base URL, stops serve (which flushes the spans) and returns serve's log.
func serveTraced(t *testing.T, env map[string]string, send func(base string), extra ...string) string {
	return serveTracedAll(t, env, []func(string){send}, extra...)
}

// serveTracedAll is serveTraced with several senders, in turn.
func serveTracedAll(t *testing.T, env map[string]string, sends []func(base string), extra ...string) string {
	t.Helper()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	args := append([]string{"serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "il.db"), "--search-index", "off"}, extra...)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	}()
	waitHealthy(t, "http://"+addr, done)
	for _, send := range sends {
		send("http://" + addr)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v; %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not shut down")
	}
	return stderr.String()
}

// tracedPost sends a GraphQL POST with a traceparent of trace tid (parent
// span 00f067aa0ba902b7) and a tracestate, and returns the response, whose
// body the caller closes.
func tracedPost(t *testing.T, base, tid, query, accept string) *http.Response {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"query": query})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("traceparent", "00-"+tid+"-00f067aa0ba902b7-01")
	req.Header.Set("tracestate", "vendor=opaque")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("query: %d %s", resp.StatusCode, body)
	}
	return resp
}

// query sends a traced query and reads its answer.
func query(t *testing.T, tid, q string) func(base string) {
	return func(base string) {
		resp := tracedPost(t, base, tid, q, "application/json")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// checkOperation asserts the spans of trace tid: the HTTP server span
// parented to the caller's span, the operation span per the GraphQL
// semantic conventions (no document text), and store reads under it.
func checkOperation(t *testing.T, spans []*tracepb.Span, opName string, childNames ...string) {
	t.Helper()
	byID := map[string]*tracepb.Span{}
	var op *tracepb.Span
	for _, sp := range spans {
		byID[hex.EncodeToString(sp.GetSpanId())] = sp
		if sp.GetName() == "query "+opName {
			op = sp
		}
		for _, a := range sp.GetAttributes() {
			if strings.Contains(a.GetValue().GetStringValue(), "{") {
				t.Errorf("span %q carries document text in %s", sp.GetName(), a.GetKey())
			}
		}
	}
	var names []string
	for _, sp := range spans {
		names = append(names, sp.GetName())
	}
	if op == nil {
		t.Fatalf("no operation span %q among %v", "query "+opName, names)
	}
	if testutil.SpanAttr(op, "graphql.operation.name") != opName || testutil.SpanAttr(op, "graphql.operation.type") != "query" {
		t.Errorf("operation span attributes: %v", op.GetAttributes())
	}
	// The operation span's ancestors reach the caller's span.
	root := op
	for {
		p, ok := byID[hex.EncodeToString(root.GetParentSpanId())]
		if !ok {
			break
		}
		root = p
	}
	if got := hex.EncodeToString(root.GetParentSpanId()); got != "00f067aa0ba902b7" {
		t.Errorf("the request's spans are not parented to the incoming traceparent: root %q has parent %s", root.GetName(), got)
	}
	status := int64(0)
	for _, a := range root.GetAttributes() {
		if a.GetKey() == "http.response.status_code" {
			status = a.GetValue().GetIntValue()
		}
	}
	if root.GetKind() != tracepb.Span_SPAN_KIND_SERVER || root.GetTraceState() != "vendor=opaque" || status != http.StatusOK {
		t.Errorf("server span: kind %v, tracestate %q, status %d", root.GetKind(), root.GetTraceState(), status)
	}
	for _, want := range childNames {
		found := false
		for _, sp := range spans {
			if sp.GetName() != want {
				continue
			}
			// A descendant of the operation span.
			for p := sp; p != nil; p = byID[hex.EncodeToString(p.GetParentSpanId())] {
				if p == op {
					found = true
					break
				}
			}
		}
		if !found {
			t.Errorf("no %q span under the operation span; spans: %v", want, names)
		}
	}
}

// TestTracingOTLP runs serve with OTEL_EXPORTER_OTLP_ENDPOINT at loopback
// OTLP receivers, HTTP/protobuf (the default) and gRPC, and checks what
// they receive for a query sent with a traceparent.
func TestTracingOTLP(t *testing.T) {
	t.Run("HTTPProtobuf", func(t *testing.T) {
		// gqlgen's executor (FastReads off): the operation span, loader
		// batches and store reads under it. (The outbound client's
		// traceparent is checked in outbound/trace_test.go.)
		sink := &testutil.OTLPSink{}
		recv := sink.HTTP(t)
		const tid = "4bf92f3577b34da6a3ce929d0e0e4736"
		env := map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": recv,
			"OTEL_EXPORTER_OTLP_HEADERS":  "X-Tenant=incidents%20team",
			"OTEL_SERVICE_NAME":           "incidentlib-test",
		}
		log := serveTraced(t, env, query(t, tid, `query Page { incidents(first: 3) { nodes { id org } } incident(id: "IL-0213") { id } }`),
			"--executor", "gqlgen")
		spans := sink.Wait(tid, "query Page")
		checkOperation(t, spans, "Page", "loader batch", "store.FindIncidents", "store.FindIncidentsByIDs")
		services := sink.Services()
		for _, h := range sink.Headers() {
			if h.Get("X-Tenant") != "incidents team" {
				t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: %q", h.Get("X-Tenant"))
			}
		}
		if len(services) == 0 || services[0] != "incidentlib-test" {
			t.Errorf("service.name: %v", services)
		}
		// The request log line carries the trace id.
		found := false
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, `"msg":"request"`) && strings.Contains(line, `"path":"/graphql"`) || strings.Contains(line, `"msg":"request"`) && strings.Contains(line, `"op":"Page"`) {
				found = found || strings.Contains(line, `"trace_id":"`+tid+`"`)
			}
		}
		if !found {
			t.Errorf("no request log line with trace_id %s:\n%s", tid, log)
		}
	})
	t.Run("GRPC", func(t *testing.T) {
		// FastReads answers this query: its operation span and snapshot
		// reads.
		sink := &testutil.OTLPSink{}
		const tid = "0af7651916cd43dd8448eb211c80319c"
		env := map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": sink.GRPC(t),
			"OTEL_EXPORTER_OTLP_PROTOCOL":        "grpc",
		}
		serveTraced(t, env, query(t, tid, `query Fast { incidents(first: 3) { nodes { id org } } }`))
		spans := sink.Wait(tid, "query Fast")
		checkOperation(t, spans, "Fast", "store.FindIncidents")
		if sv := sink.Services(); len(sv) == 0 || sv[0] != tracing.DefaultServiceName {
			t.Errorf("default service.name: %v", sv)
		}
	})
}

// TestTracingSubscription: a subscription has its operation span, and each
// event its own span, in the trace of the request that opened the stream.
func TestTracingSubscription(t *testing.T) {
	sink := &testutil.OTLPSink{}
	recv := sink.HTTP(t)
	const tid = "5bf92f3577b34da6a3ce929d0e0e4737"
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv, "OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=incidents%20team"}
	serveTracedAll(t, env, []func(string){func(base string) {
		resp := tracedPost(t, base, tid, `subscription Live { incidentChanged(since: "0") { seq incident { id title } } }`, "text/event-stream")
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), `"seq"`) {
				return // one event
			}
		}
		t.Fatalf("no event: %v", sc.Err())
	}, func(base string) {
		// graphql-transport-ws through the server span's writer: the
		// upgrade hijacks the connection through Unwrap.
		h := http.Header{}
		h.Set("traceparent", "00-"+tid+"-00f067aa0ba902b7-01")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql",
			&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
		if err != nil {
			t.Fatalf("WebSocket upgrade with tracing on: %v", err)
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)); err != nil {
			t.Fatal(err)
		}
		if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), "connection_ack") {
			t.Fatalf("no connection_ack: %s %v", msg, err)
		}
	}})
	spans := sink.Wait(tid, "subscription event")
	var names []string
	ok := false
	for _, sp := range spans {
		names = append(names, sp.GetName())
		if sp.GetName() == "subscription event" && testutil.SpanUnder(spans, sp, "POST") {
			ok = true
		}
	}
	if !ok {
		t.Fatalf("no subscription event span under the request's span: %v", names)
	}
	op := false
	for _, sp := range spans {
		if sp.GetName() == "subscription Live" {
			op = testutil.SpanAttr(sp, "graphql.operation.type") == "subscription" && testutil.SpanAttr(sp, "graphql.operation.name") == "Live"
		}
	}
	if !op {
		t.Errorf("no subscription operation span with its attributes: %v", names)
	}
}

type plainHandler struct{}

func (plainHandler) ServeHTTP(http.ResponseWriter, *http.Request) {}

// TestTracingOff: without an OTLP endpoint nothing is made (no exporter,
// no provider) and the hooks pass through; nonsensical values are
// refused at start-up, naming the variable.
func TestTracingOff(t *testing.T) {
	t.Run("NoEndpoint", func(t *testing.T) {
		c, err := tracing.ConfigFromEnv(func(k string) string {
			return map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "x"}[k]
		})
		if err != nil || c.Endpoint != "" {
			t.Fatalf("config without endpoint: %+v %v", c, err)
		}
		if _, err := tracing.Setup(context.Background(), func(string) string { return "" }); err != nil {
			t.Fatal(err)
		}
		if tracing.Enabled() {
			t.Fatal("tracing on without an endpoint")
		}
		if _, same := tracing.HTTP(plainHandler{}).(plainHandler); !same {
			t.Fatal("tracing.HTTP wrapped the handler while off")
		}
		ctx, span := tracing.Start(context.Background(), "x")
		if span.IsRecording() || ctx != context.Background() {
			t.Fatal("a span was made while off")
		}
	})
	for name, env := range map[string]map[string]string{
		"UnknownProtocol": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"},
		"JSONProtocol":    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		"UnknownSampler":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "sometimes"},
		"BadRatio":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
		"NotAURL":         {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4318"},
		"BadHeaders":      {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := runCmd(t, env, "", "serve", "--addr", testutil.FreeAddr(t), "--db", filepath.Join(t.TempDir(), "il.db"))
			if err == nil || !strings.Contains(err.Error(), "OTEL_") {
				t.Fatalf("serve started or the error names no variable: %v %s", err, stderr)
			}
		})
	}
}
