package gqledge

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestErrorStatuses walks the one table on the GraphQL transports: a
// GraphQL-over-HTTP response takes the table's status for a code that
// refuses the whole request (200 otherwise: a field's error), a refused
// stream (SSE) the table's status, a WebSocket subscribe the table's close
// code. The real handler's answers for some codes are in
// server/errstatus_test.go.
func TestErrorStatuses(t *testing.T) {
	e := &Edge{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, code := range incidentlib.Codes() {
		t.Run(code, func(t *testing.T) {
			st, _ := incidentlib.StatusOf(code)
			rp := &reply{header: http.Header{}}
			ctx := context.WithValue(context.Background(), replyKey{}, rp)
			out := e.PresentError(ctx, incidentlib.Errorf(code, "x"))
			if got, _ := out.Extensions["code"].(string); got != code {
				t.Fatalf("extensions.code %q", got)
			}
			want := 0
			if st.Request {
				want = st.HTTP
			}
			if rp.status != want {
				t.Fatalf("GraphQL over HTTP: status %d, want %d", rp.status, want)
			}
			if got := statusOfCode(code); got != st.HTTP {
				t.Fatalf("a stream refused: status %d, the table says %d", got, st.HTTP)
			}
			if got := closeOf(code); int(got) != st.Close {
				t.Fatalf("WebSocket close code %d, the table says %d", got, st.Close)
			}
		})
	}
	if closeOf(incidentlib.ESUBSCRIPTIONLIMIT) != closeSubscriptionCap {
		t.Fatal("SUBSCRIPTION_LIMIT does not close with 4429")
	}
	if statusOfCode(incidentlib.EREADONLY) != http.StatusForbidden {
		t.Fatal("a stream refused with READ_ONLY is not 403 as in REST")
	}
}
