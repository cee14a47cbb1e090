package testutil

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

// StreamRefusal checks that status and b are a refusal as an event
// stream (server/gqledge/streams/refusal.go): 200, one `next` event whose
// data is {"errors": [...]}, then `complete` and the end; it returns the
// first error's code.
func StreamRefusal(t testing.TB, status int, b []byte) string {
	t.Helper()
	data, ok := bytes.CutPrefix(b, []byte("event: next\ndata: "))
	data, rest, ok2 := bytes.Cut(data, []byte("\n\n"))
	if status != http.StatusOK || !ok || !ok2 || string(rest) != "event: complete\ndata: \n\n" {
		t.Fatalf("not a refusal in an event stream: %d %q", status, b)
	}
	return ErrorCode(t, data)
}

// Refusal reads what remains of an opened stream, which must be a
// refusal (StreamRefusal), and returns its code.
func (s *SSEStream) Refusal(t testing.TB) string {
	t.Helper()
	defer s.Close()
	stop := time.AfterFunc(10*time.Second, s.stop) // a stream that is no refusal does not end
	defer stop.Stop()
	b, _ := io.ReadAll(s.resp.Body)
	return StreamRefusal(t, s.resp.StatusCode, b)
}

// Header is the stream's response header.
func (s *SSEStream) Header() http.Header { return s.resp.Header }
