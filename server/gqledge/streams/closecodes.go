package streams

import (
	"github.com/coder/websocket"

	"github.com/incidentlib/incidentlib"
)

// closeOf is the WebSocket close code of a subscribe refused with code,
// from the one table (incidentlib.StatusOf); 0: an error message for the
// operation, and the connection stays.
func closeOf(code string) websocket.StatusCode {
	st, _ := incidentlib.StatusOf(code)
	return websocket.StatusCode(st.Close)
}
