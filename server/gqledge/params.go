package gqledge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/incidentlib/incidentlib/iljson"
)

// The one decoder of a GraphQL request's parameters, for POST bodies and
// GET query strings alike: the guard decodes a request with it before
// anything else reads the request, so that what the client got wrong is
// answered once, as BAD_REQUEST with HTTP 400 and the byte offset where
// JSON parsing stopped; the transports and the response cache read what
// it decoded (Edge.params), never the raw request again.
//
// It is strict where gqlgen's transport.POST is lenient: the body must be
// exactly one JSON object in UTF-8 (nothing after it), its keys match
// exactly (encoding/json matches "QUERY" to query), query and
// operationName are strings, variables and extensions are objects (each
// may be null or left out), and JSON nests no deeper than
// maxRequestNesting.

// maxRequestNesting is how deep the JSON of a request may nest, the
// request object itself included: far more than any variables of the
// schema need (an IncidentFilter is three levels below the body), far
// less than encoding/json's 10,000.
const maxRequestNesting = 64

// RequestError is a client's mistake in the HTTP form of a GraphQL
// request: answered 400 with extensions.code BAD_REQUEST and, for JSON that
// does not parse, extensions.offset: where parsing stopped, the 0-based
// index of the first byte that could not be read (the length of the text
// when it ended too soon).
type RequestError struct {
	Msg    string
	Offset int64 // -1 when the JSON parsed
}

func (e *RequestError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s (at byte %d)", e.Msg, e.Offset)
	}
	return e.Msg
}

func (e *RequestError) extensions() map[string]any {
	if e.Offset < 0 {
		return nil
	}
	return map[string]any{"offset": e.Offset}
}

func reqErr(offset int64, format string, args ...any) *RequestError {
	return &RequestError{Msg: fmt.Sprintf(format, args...), Offset: offset}
}

// wireParams is what a request says, decoded: the parameters gqlgen
// reads, and the variables as sent (for the response cache's key).
type wireParams struct {
	params  graphql.RawParams
	rawVars json.RawMessage
}

// DecodeBody decodes a JSON POST body holding one GraphQL request. It is
// exported for the fuzz test and the subscription transports (an SSE POST,
// a graphql-transport-ws subscribe payload); the edge calls it through its
// memo (sharedParams).
func DecodeBody(body []byte) (graphql.RawParams, error) {
	w, err := decodeBody(body)
	if err != nil {
		return graphql.RawParams{}, err
	}
	return w.params, nil
}

func decodeBody(body []byte) (*wireParams, *RequestError) {
	if err := checkJSONText(body, "the request body"); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, jsonError(err, "the request body")
	}
	if fields == nil { // the body is null
		return nil, reqErr(-1, "the request body must be a JSON object: a GraphQL request")
	}
	w := &wireParams{}
	var err *RequestError
	if w.params.Query, err = stringParam(fields, "query"); err != nil {
		return nil, err
	}
	if w.params.OperationName, err = stringParam(fields, "operationName"); err != nil {
		return nil, err
	}
	if w.params.Variables, w.rawVars, err = objectParam(fields["variables"], "variables", false); err != nil {
		return nil, err
	}
	if w.params.Extensions, _, err = objectParam(fields["extensions"], "extensions", false); err != nil {
		return nil, err
	}
	return w, w.checkQuery()
}

// checkQuery refuses a request without a document: query is required,
// unless a persisted query (APQ, a trusted document's id) names one.
func (w *wireParams) checkQuery() *RequestError {
	if w.params.Query == "" && w.params.Extensions["persistedQuery"] == nil {
		return reqErr(-1, "the request has no query: send the document in query (or a persisted query's id in extensions)")
	}
	return nil
}

// decodeQuery decodes the GraphQL parameters of a GET's query string.
func decodeQuery(rawQuery string) (*wireParams, *RequestError) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, reqErr(-1, "the query string is malformed")
	}
	w := &wireParams{}
	w.params.Query, w.params.OperationName = q.Get("query"), q.Get("operationName")
	for _, p := range []string{"query", "operationName"} {
		if v := q.Get(p); !utf8.ValidString(v) {
			return nil, reqErr(-1, "%s is not valid UTF-8", p)
		}
	}
	var rerr *RequestError
	if v := q.Get("variables"); v != "" {
		if rerr = checkJSONText([]byte(v), "variables"); rerr != nil {
			return nil, rerr
		}
		if w.params.Variables, w.rawVars, rerr = objectParam(json.RawMessage(v), "variables", true); rerr != nil {
			return nil, rerr
		}
	}
	if v := q.Get("extensions"); v != "" {
		if rerr = checkJSONText([]byte(v), "extensions"); rerr != nil {
			return nil, rerr
		}
		if w.params.Extensions, _, rerr = objectParam(json.RawMessage(v), "extensions", true); rerr != nil {
			return nil, rerr
		}
	}
	return w, w.checkQuery()
}

// stringParam reads a string member of the request object: "" when it is
// left out or null.
func stringParam(fields map[string]json.RawMessage, name string) (string, *RequestError) {
	raw, ok := fields[name]
	if !ok || isNull(raw) {
		return "", nil
	}
	if raw[0] != '"' {
		return "", reqErr(-1, "%s must be a string, not %s", name, jsonKind(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", reqErr(-1, "%s must be a string", name)
	}
	return s, nil
}

// objectParam decodes an object member (variables, extensions): nil when
// it is left out or null. standalone: raw is a whole JSON text of its own
// (a GET parameter), whose syntax is checked here.
func objectParam(raw json.RawMessage, name string, standalone bool) (map[string]any, json.RawMessage, *RequestError) {
	if standalone && !json.Valid(raw) {
		var v any
		return nil, nil, jsonError(json.Unmarshal(raw, &v), name)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return nil, nil, nil
	}
	if raw[0] != '{' {
		return nil, nil, reqErr(-1, "%s must be a JSON object, not %s", name, jsonKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, nil, jsonError(err, name)
	}
	return m, raw, nil
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// jsonKind names the kind of a JSON value, for messages that must not
// echo what the client sent (it may be a secret).
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonError words encoding/json's error about a request's JSON, with the
// offset where parsing stopped.
func jsonError(err error, what string) *RequestError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// encoding/json counts the bytes it read, the bad one included;
		// the offset is that byte's, or the length when the text ended.
		off := se.Offset
		if off > 0 && !strings.HasPrefix(se.Error(), "unexpected end") {
			off--
		}
		return reqErr(off, "%s is not valid JSON: %s", what, se.Error())
	case errors.As(err, &te):
		return reqErr(te.Offset, "%s must be a JSON object, not a %s", what, te.Value)
	case err != nil && err.Error() == "unexpected EOF":
		return reqErr(-1, "%s is not valid JSON: it ends too soon", what)
	}
	return reqErr(-1, "%s is not valid JSON", what)
}

// checkJSONText checks what encoding/json lets through or reports late: a
// text that is not UTF-8 (it replaces bad bytes with U+FFFD silently) and
// nesting deeper than maxRequestNesting (it allows 10,000 levels). One
// pass over the bytes, strings skipped.
func checkJSONText(b []byte, what string) *RequestError {
	if i := iljson.InvalidUTF8Offset(b); i >= 0 {
		return reqErr(int64(i), "%s is not valid UTF-8", what)
	}
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxRequestNesting {
				return reqErr(int64(i), "%s nests JSON more than %d deep", what, maxRequestNesting)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
