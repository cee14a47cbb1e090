package gqledge

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestErrorStatuses walks the one table on the GraphQL-over-HTTP
// transports: a response takes the table's status for a code that refuses
// the whole request (200 otherwise: a field's error). The subscription
// transports' walk is in streams/closecodes_test.go; the real handler's
// answers for some codes are in server/errstatus_test.go.
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
		})
	}
}
