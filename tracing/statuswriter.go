package tracing

import "net/http"

// StatusWriter records a response's status and the bytes of its body as
// they pass through to the writer it wraps: the one status-recording
// writer of the server (the server span here, the request log of
// server/gqledge, the HTTP request metric in server.Server.ServeHTTP). It
// lives in tracing, the leaf every package may import, because tracing
// imports nothing of ours (layout_test.go). The layers below reach the
// connection's writer (flush, hijack, deadlines) through Unwrap.
type StatusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

// NewStatusWriter wraps w.
func NewStatusWriter(w http.ResponseWriter) *StatusWriter { return &StatusWriter{ResponseWriter: w} }

// Status is the status sent: the first WriteHeader's, 200 if the body
// came first or nothing was written (as net/http answers then).
func (w *StatusWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Bytes is how many bytes of body were written.
func (w *StatusWriter) Bytes() int { return w.bytes }

func (w *StatusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
