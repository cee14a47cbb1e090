package testutil

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// OTLPSink is a loopback OTLP traces receiver for tests: it keeps what
// exporters send, decoded with the protocol's own messages
// (go.opentelemetry.io/proto/otlp). Its receivers are HTTP with protobuf
// (POST /v1/traces, HTTP) and gRPC (GRPC).
type OTLPSink struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
	headers  []http.Header
}

func (s *OTLPSink) add(req *coltracepb.ExportTraceServiceRequest, h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = append(s.headers, h)
	for _, rs := range req.GetResourceSpans() {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				s.services = append(s.services, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			s.spans = append(s.spans, ss.GetSpans()...)
		}
	}
}

// Of returns the spans of trace tid (hex) received so far.
func (s *OTLPSink) Of(tid string) []*tracepb.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*tracepb.Span
	for _, sp := range s.spans {
		if hex.EncodeToString(sp.GetTraceId()) == tid {
			out = append(out, sp)
		}
	}
	return out
}

// Services returns the service.name of each resource received.
func (s *OTLPSink) Services() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.services...)
}

// Headers returns the HTTP headers of each export received over HTTP.
func (s *OTLPSink) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// Wait returns the spans of trace tid once one is named name, or what
// there is after 10 s.
func (s *OTLPSink) Wait(tid, name string) []*tracepb.Span {
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := s.Of(tid)
		for _, sp := range spans {
			if sp.GetName() == name {
				return spans
			}
		}
		if time.Now().After(deadline) {
			return spans
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HTTP starts the OTLP/HTTP receiver (protobuf) and returns its base URL,
// for OTEL_EXPORTER_OTLP_ENDPOINT.
func (s *OTLPSink) HTTP(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: unexpected %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("OTLP receiver: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.add(&req, r.Header.Clone())
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type otlpGRPC struct {
	coltracepb.UnimplementedTraceServiceServer
	s *OTLPSink
}

func (g otlpGRPC) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.s.add(req, nil)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// GRPC starts the OTLP/gRPC receiver and returns its http:// URL.
func (s *OTLPSink) GRPC(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, otlpGRPC{s: s})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

// SpanAttr returns the string attribute key of sp, or "".
func SpanAttr(sp *tracepb.Span, key string) string {
	for _, a := range sp.GetAttributes() {
		if a.GetKey() == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// SpanUnder reports whether sp has an ancestor named name among spans.
func SpanUnder(spans []*tracepb.Span, sp *tracepb.Span, name string) bool {
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.GetSpanId())] = s
	}
	for p := byID[hex.EncodeToString(sp.GetParentSpanId())]; p != nil; p = byID[hex.EncodeToString(p.GetParentSpanId())] {
		if p.GetName() == name {
			return true
		}
	}
	return false
}
