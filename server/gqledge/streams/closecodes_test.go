package streams

import (
	"net/http"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestErrorStatuses walks the one table on the subscription transports: a
// refused stream (SSE) takes the table's status, a WebSocket subscribe
// the table's close code (gqledge's TestErrorStatuses walks GraphQL over
// HTTP).
func TestErrorStatuses(t *testing.T) {
	for _, code := range incidentlib.Codes() {
		t.Run(code, func(t *testing.T) {
			st, _ := incidentlib.StatusOf(code)
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
