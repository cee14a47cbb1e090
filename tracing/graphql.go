package tracing

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// GraphQL is the gqlgen extension that makes one span per GraphQL
// operation, per the OpenTelemetry GraphQL semantic conventions: named
// "{graphql.operation.type} {graphql.operation.name}" (the type alone for
// an anonymous operation), with graphql.operation.type and
// graphql.operation.name, and never the document's text. It intercepts
// operations, not fields, so it covers both executors (gqlgen's and
// graph.FastReads, which answers inside the operation chain) and
// server.New registers it before FastReads. A subscription's operation
// span covers its start; each event gets its own span (EventSpan).
type GraphQL struct{}

var (
	_ graphql.HandlerExtension     = GraphQL{}
	_ graphql.OperationInterceptor = GraphQL{}
)

// ExtensionName implements graphql.HandlerExtension.
func (GraphQL) ExtensionName() string { return "OpenTelemetry" }

// Validate implements graphql.HandlerExtension.
func (GraphQL) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation implements graphql.OperationInterceptor.
func (GraphQL) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	t := on.Load()
	if t == nil {
		return next(ctx)
	}
	typ, name := "query", ""
	if oc := graphql.GetOperationContext(ctx); oc != nil {
		name = oc.OperationName
		if oc.Operation != nil {
			typ = string(oc.Operation.Operation)
			if name == "" {
				name = oc.Operation.Name
			}
		}
	}
	spanName := typ
	attrs := []attribute.KeyValue{attribute.String("graphql.operation.type", typ)}
	if name != "" {
		spanName += " " + name
		attrs = append(attrs, attribute.String("graphql.operation.name", name))
	}
	ctx, span := (*t).Start(ctx, spanName, trace.WithAttributes(attrs...))
	rh := next(ctx)
	if typ == "subscription" {
		// The operation's span covers its start; each event executes
		// under its own span (EventSpan), with the stream's context.
		span.End()
		return rh
	}
	ended := false
	return func(rctx context.Context) *graphql.Response {
		// gqlgen executes in the response handler, with the transport's
		// context: the operation's span goes into it.
		resp := rh(trace.ContextWithSpan(rctx, span))
		if !ended {
			ended = true
			if resp != nil && len(resp.Errors) > 0 {
				span.SetStatus(codes.Error, "")
				span.SetAttributes(attribute.Int("graphql.errors", len(resp.Errors)))
			}
			span.End()
		}
		return resp
	}
}

// EventSpan starts the span of one subscription event (its execution and
// encoding), a child of ctx's span, named "subscription event" with the
// operation's graphql.operation.name when ctx has the operation.
func EventSpan(ctx context.Context) (context.Context, trace.Span) {
	t := on.Load()
	if t == nil {
		return ctx, noopSpan
	}
	var opts []trace.SpanStartOption
	if graphql.HasOperationContext(ctx) {
		if oc := graphql.GetOperationContext(ctx); oc.OperationName != "" {
			opts = append(opts, trace.WithAttributes(attribute.String("graphql.operation.name", oc.OperationName)))
		}
	}
	return (*t).Start(ctx, "subscription event", opts...)
}
