package cluster_test

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/tracing"
)

// TestWriteTraced: a write through one node makes a "cluster publish"
// span under the writer's span, and every node's "cluster apply" of it
// follows that span (the trace context travels in the message's headers).
func TestWriteTraced(t *testing.T) {
	sink := &testutil.OTLPSink{}
	url := sink.HTTP(t)
	shutdown, err := tracing.Setup(context.Background(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	c := startCluster(t, 3)
	ctx, span := tracing.Start(editor("n1"), "test write")
	tid := span.SpanContext().TraceID().String()
	inc := incidents(t, 1, 7)[0]
	if _, err := c.members[0].mb.Writer.UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	span.End()
	c.level(c.members[0].mb.Applier.Applied())
	if err := shutdown(context.Background()); err != nil { // flush
		t.Fatal(err)
	}
	spans := sink.Of(tid)
	var publish string
	applies := 0
	var names []string
	for _, sp := range spans {
		names = append(names, sp.GetName())
		if sp.GetName() == "cluster publish" && testutil.SpanUnder(spans, sp, "test write") {
			publish = hex.EncodeToString(sp.GetSpanId())
		}
	}
	for _, sp := range spans {
		if sp.GetName() == "cluster apply" && hex.EncodeToString(sp.GetParentSpanId()) == publish {
			applies++
		}
	}
	if publish == "" || applies != 3 {
		t.Fatalf("publish span %q, %d apply spans under it, want 3; spans: %v", publish, applies, names)
	}
}
