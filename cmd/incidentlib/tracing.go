package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/incidentlib/incidentlib/tracing"
)

// tracingFlushTimeout bounds the flush of the spans still batched at exit.
const tracingFlushTimeout = 5 * time.Second

// startTracing sets up OpenTelemetry traces from the OTEL_* variables
// (tracing.Setup, docs/tracing.md): off without an OTLP endpoint, and a
// nonsensical value refuses to start. The returned stop flushes the spans
// still batched; serve defers it first, so it runs last.
func startTracing(ctx context.Context, getenv func(string) string, logger *slog.Logger) (stop func(), err error) {
	shutdown, err := tracing.Setup(ctx, getenv)
	if err != nil {
		return nil, fmt.Errorf("serve: tracing: %w", err)
	}
	if tracing.Enabled() {
		// The SDK's own errors (an export that failed) as log lines of
		// serve's, not the standard logger's.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("tracing", "err", err) }))
		c, _ := tracing.ConfigFromEnv(getenv)
		logger.Info("tracing on", "endpoint", c.Endpoint, "protocol", c.Protocol, "service", c.ServiceName)
	}
	return func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := shutdown(fctx); err != nil {
			logger.Warn("flushing the traces at exit", "err", err)
		}
	}, nil
}
