package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
)

// TestErrorStatusesThroughHandler: the real handler answers an error code
// with the one table's status on each transport (the walk of every code
// per transport is in server/restapi and server/gqledge).
func TestErrorStatusesThroughHandler(t *testing.T) {
	f := testutil.NewLive(t, 5, server.Config{Primary: "http://primary.example:8080"})
	mutation := `mutation { deleteIncident(id: "` + f.Incs[0].ID + `") { deletedId } }`
	post := func(t *testing.T, accept string) (int, []byte) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"query": mutation})
		req, _ := http.NewRequest(http.MethodPost, f.HS.URL+"/graphql", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	st, _ := incidentlib.StatusOf(incidentlib.EREADONLY)
	t.Run("ErrSequenceAheadSSE", func(t *testing.T) {
		// A stream refused before any event with what a retry cannot
		// change: the code in an event stream, as graphql-sse's
		// reference server answers (gqledge/streams/refusal.go); a 4xx
		// status would make its client retry.
		s, status, body := testutil.OpenSSE(t, f.HS.URL, map[string]any{"since": "99999999"}, nil)
		if s == nil {
			t.Fatalf("%d %s", status, body)
		}
		if code := s.Refusal(t); code != incidentlib.ESEQUENCEAHEAD {
			t.Fatalf("code %q", code)
		}
	})
	t.Run("ErrReadOnlySSE", func(t *testing.T) {
		// A mutation over SSE runs as one operation: its field's error
		// is in the one event, as over HTTP.
		status, body := post(t, "text/event-stream")
		if status != http.StatusOK || st.Request || !strings.Contains(string(body), `"code":"READ_ONLY"`) {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("ErrReadOnlyGraphQL", func(t *testing.T) {
		// A field's error: 200 with the code (the table's Request is not set).
		status, body := post(t, "application/graphql-response+json")
		if code := testutil.ErrorCode(t, body); status != http.StatusOK || st.Request || code != incidentlib.EREADONLY {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("ErrReadOnlyWebSocket", func(t *testing.T) {
		ws := testutil.DialWS(t, f.HS.URL, nil)
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.Init(t, nil)
		ws.Send(t, map[string]any{"id": "m", "type": "subscribe", "payload": map[string]any{"query": mutation}})
		m := ws.Read(t)
		if st.Close != 0 || m.Type != "next" || m.ID != "m" || !strings.Contains(string(m.Payload), incidentlib.EREADONLY) {
			t.Fatalf("%+v %s", m, m.Payload)
		}
	})
	t.Run("ErrNotFoundREST", func(t *testing.T) {
		resp, err := http.Get(f.HS.URL + "/api/v1/incidents/IL-9999")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != incidentlib.HTTPStatus(incidentlib.ENOTFOUND) {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
	t.Run("ErrSubscriptionLimitWebSocketClose", func(t *testing.T) {
		// The close code comes from the table (TestSubscriptionLimits
		// reaches the limit through the handler).
		if st, _ := incidentlib.StatusOf(incidentlib.ESUBSCRIPTIONLIMIT); st.Close != 4429 || st.HTTP != http.StatusTooManyRequests {
			t.Fatalf("%+v", st)
		}
	})
}
