// Package tracing is incidentlib's OpenTelemetry tracing: the tracer
// provider set up from the standard OTEL_* variables (Setup), and the hook
// points every path goes through: the incoming W3C trace context and the
// server span of each HTTP request (HTTP), the span of each GraphQL
// operation (GraphQL), the trace context sent on every outbound request
// (Inject, called by the outbound package's one client), the trace id of
// the request log line (TraceID), and the child spans of store reads,
// loader batches, search, cluster publish and apply and subscription events
// (Start, StartKV, EventSpan; graph/tracing.go wraps the store reads).
//
// Tracing is on only when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. Off, nothing is created: every
// hook is one atomic load and returns what it was given (no span, no
// context value, no extraction or injection).
package tracing

import (
	"context"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span incidentlib makes.
const ScopeName = "github.com/incidentlib/incidentlib"

// on holds the tracer while tracing is on (Setup with an endpoint); nil
// when off.
var on atomic.Pointer[trace.Tracer]

// propagator is the W3C trace context and baggage, the one taken from
// requests and sent on outbound ones.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Enabled reports whether tracing is on.
func Enabled() bool { return on.Load() != nil }

var noopSpan trace.Span = noop.Span{}

// Start starts a span named name as a child of ctx's span, when tracing is
// on; off, it returns ctx and a span that records nothing. Attributes are
// worth building only when span.IsRecording().
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t := on.Load()
	if t == nil {
		return ctx, noopSpan
	}
	return (*t).Start(ctx, name, opts...)
}

// StartKV is Start with one string attribute, built only when tracing is
// on (the hooks in the store, search and cluster paths use it).
func StartKV(ctx context.Context, name, key, value string) (context.Context, trace.Span) {
	t := on.Load()
	if t == nil {
		return ctx, noopSpan
	}
	return (*t).Start(ctx, name, trace.WithAttributes(attribute.String(key, value)))
}

// TraceID returns the hex trace id of ctx's span, or "" (always "" when
// tracing is off).
func TraceID(ctx context.Context) string {
	if on.Load() == nil {
		return ""
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// Inject writes ctx's trace context (traceparent, tracestate, baggage)
// into h, when tracing is on. The outbound package's client calls it on
// every request it sends.
func Inject(ctx context.Context, h http.Header) {
	if on.Load() == nil {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// HTTP is the outermost middleware: it takes the W3C trace context of the
// request (traceparent, tracestate, baggage) and starts the request's
// server span under it, whose context every layer below reads (the request
// log's trace_id, the GraphQL operation span, outbound requests). Off, it
// is next itself.
func HTTP(next http.Handler) http.Handler {
	if !Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := on.Load()
		if t == nil {
			next.ServeHTTP(w, r)
			return
		}
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := (*t).Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("url.path", r.URL.Path),
			))
		defer span.End()
		sw := NewStatusWriter(w)
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.Status()))
		if sw.Status() >= 500 {
			span.SetStatus(codes.Error, "")
		}
	})
}

// install turns tracing on with tp's tracer (Setup), or off with nil.
func install(tp trace.TracerProvider) {
	if tp == nil {
		on.Store(nil)
		return
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	t := tp.Tracer(ScopeName)
	on.Store(&t)
}

// Extract returns ctx with the trace context that h carries (a cluster
// message's headers: the publishing request's span), when tracing is on.
func Extract(ctx context.Context, h http.Header) context.Context {
	if on.Load() == nil || h == nil {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}
