package streams

// The frames of a graphql-transport-ws connection (ws.go): reading a
// message, writing one, and the connection_init that says who sends them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/incidentlib/incidentlib"
)

// errBadUTF8 ends a connection that sent a text message that is not
// UTF-8 (close 1007, as RFC 6455 says): nothing of it is read, or echoed.
var errBadUTF8 = errors.New("a text message that is not UTF-8")

// read reads one message (a text that is not one reads as type
// "invalid"); it ends when the connection closes, or with errBadUTF8.
func (wc *wsConn) read() (*wsMessage, error) {
	typ, b, err := wc.c.Read(context.Background())
	if err != nil {
		return nil, err
	}
	if typ == websocket.MessageText && !utf8.Valid(b) {
		return nil, errBadUTF8
	}
	var m wsMessage
	if err := json.Unmarshal(b, &m); err != nil || m.Type == "" {
		return &wsMessage{Type: "invalid"}, nil
	}
	return &m, nil
}

// send writes one message under the write timeout.
func (wc *wsConn) send(m *wsMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return wc.write(b)
}

// writeParts writes one text message made of parts, under the write
// timeout, without joining them.
func (wc *wsConn) writeParts(parts ...[]byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(wc.ctx), wc.l.opts.WriteTimeout)
	defer cancel()
	w, err := wc.c.Writer(ctx, websocket.MessageText)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

func (wc *wsConn) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(wc.ctx), wc.l.opts.WriteTimeout)
	defer cancel()
	return wc.c.Write(ctx, websocket.MessageText, b)
}

// init authenticates a token in connection_init's payload: its
// Authorization member, a string (a member of another case, e.g.
// "authorization", is the same member). Two such members, or one that is
// not a non-empty string, close the connection with 4400: never read as
// anonymous, nor one of two tokens picked. A token that does not
// authenticate closes it with 4403.
func (wc *wsConn) init(payload json.RawMessage) (websocket.StatusCode, string) {
	auth, found, err := initAuthorization(payload)
	if err != nil {
		return closeBadMessage, err.Error()
	}
	if !found {
		return 0, ""
	}
	r := wc.r.Clone(wc.r.Context())
	r.Header.Set("Authorization", auth)
	ar, key, rf := wc.l.admit(r)
	if rf != nil {
		return closeForbidden, "Forbidden: " + incidentlib.EUNAUTHENTICATED
	}
	wc.r, wc.client = ar, key
	return 0, ""
}

// initAuthorization reads the Authorization member of a connection_init
// payload (null, absent or an object).
func initAuthorization(payload json.RawMessage) (auth string, found bool, err error) {
	if len(payload) == 0 || string(payload) == "null" {
		return "", false, nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", false, errors.New("the connection_init payload must be an object")
	}
	// The members as written: json.Unmarshal keeps the last of two equal
	// names, so the names are read again from the text.
	dec := json.NewDecoder(bytes.NewReader(payload))
	_, _ = dec.Token() // {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false, errors.New("the connection_init payload must be an object")
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false, errors.New("the connection_init payload must be an object")
		}
		if !strings.EqualFold(name, "Authorization") {
			continue
		}
		if found {
			return "", false, errors.New("the connection_init payload has more than one Authorization member")
		}
		found = true
		if json.Unmarshal(v, &auth) != nil || auth == "" {
			return "", false, errors.New("the connection_init payload's Authorization must be a string: Bearer <token>")
		}
	}
	return auth, found, nil
}
