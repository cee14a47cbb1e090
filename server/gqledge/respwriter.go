package gqledge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/incidentlib/incidentlib/graph"
)

// The GraphQL HTTP transports. They behave as gqlgen's transport.POST and
// transport.GET do (the same content negotiation, statuses and error
// bodies), except in how they write a response without errors: gqlgen
// encodes the whole response with json.Marshal, which runs the executor's
// output, already compact JSON, through encoding/json's compactor a second
// time (about 8% of the CPU of a list page). Here the data is written as it
// is, behind `{"data":` and with its Content-Length, and only the bytes
// json.Marshal would escape (<, >, &, U+2028, U+2029) are looked for and
// escaped the same way, so the bytes are exactly those json.Marshal writes.
// Responses with errors still go through json.Marshal.
//
// This relies on the executor's data being compact: every marshaler writes
// no whitespace between tokens (the JSON scalar compacts what it writes,
// see model.MarshalJSON). TestResponseBytes holds both transports to that.

// postTransport is transport.POST with the one-pass response writer, and
// the parameters of the bodies it has seen kept in params (decodeParams).
type postTransport struct {
	transport.POST
	params *memo[*decodedBody]
}

// getTransport is transport.GET with the one-pass response writer.
type getTransport struct{ transport.GET }

var (
	_ graphql.Transport = postTransport{}
	_ graphql.Transport = getTransport{}
)

func (h postTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	contentType := responseContentType(h.ResponseHeaders, r, h.UseGrapQLResponseJsonByDefault)
	writeHeaders(w, contentType, h.ResponseHeaders)
	start := graphql.Now()

	body, err := io.ReadAll(r.Body)
	if err != nil {
		gqlErr := gqlerror.Errorf("could not read request body: %+v", err)
		writeRequestErrors(w, exec.DispatchError(ctx, gqlerror.List{gqlErr}))
		return
	}
	params, decoded, rerr := decodeParams(h.params, body)
	if rp := replyFrom(ctx); rp != nil {
		rp.body = decoded // for the limits extension's cost
	}
	if rerr != nil {
		// The guard refuses such a body before it gets here; this is for
		// the transport used on its own.
		w.WriteHeader(http.StatusBadRequest)
		writeRequestError(w, rerr)
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}

	rc, opErr := exec.CreateOperationContext(ctx, params)
	if opErr != nil {
		w.WriteHeader(statusFor(contentType, opErr))
		writeRequestErrors(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr))
		return
	}
	ctx, bufs := graph.WithResponseBuffers(ctx)
	defer bufs.Release()
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx))
}

func (h getTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	contentType := responseContentType(h.ResponseHeaders, r, h.UseGrapQLResponseJsonByDefault)
	writeHeaders(w, contentType, h.ResponseHeaders)
	start := graphql.Now()
	wp, rerr := decodeQuery(r.URL.RawQuery)
	if rerr != nil {
		// The guard refuses such a query string before it gets here.
		w.WriteHeader(http.StatusBadRequest)
		writeRequestError(w, rerr)
		return
	}
	raw := &wp.params
	raw.Headers = r.Header
	raw.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}

	opCtx, gqlErr := exec.CreateOperationContext(r.Context(), raw)
	if gqlErr != nil {
		w.WriteHeader(statusFor(contentType, gqlErr))
		writeRequestErrors(w, exec.DispatchError(graphql.WithOperationContext(r.Context(), opCtx), gqlErr))
		return
	}
	if op := opCtx.Doc.Operations.ForName(opCtx.OperationName); op.Operation != ast.Query {
		w.WriteHeader(http.StatusNotAcceptable)
		writeJSONError(w, "GET requests only allow query operations")
		return
	}
	ctx, bufs := graph.WithResponseBuffers(r.Context())
	defer bufs.Release()
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	writeResponse(w, responses(ctx))
}

const (
	contentTypeJSON            = "application/json"
	contentTypeGraphQLResponse = "application/graphql-response+json"
)

// responseContentType negotiates the response's media type from Accept.
func responseContentType(explicit map[string][]string, r *http.Request, graphQLResponseByDefault bool) string {
	for k, v := range explicit {
		if strings.EqualFold(k, "Content-Type") {
			return v[0]
		}
	}
	byDefault := contentTypeJSON
	if graphQLResponseByDefault {
		byDefault = contentTypeGraphQLResponse
	}
	accept := r.Header.Get("Accept")
	if accept == "" {
		return byDefault
	}
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "*/*", "application/*":
			return byDefault
		case contentTypeJSON:
			return contentTypeJSON
		case contentTypeGraphQLResponse:
			return contentTypeGraphQLResponse
		}
	}
	return contentTypeGraphQLResponse
}

func writeHeaders(w http.ResponseWriter, contentType string, extra map[string][]string) {
	headers := map[string][]string{"Content-Type": {contentType}}
	maps.Copy(headers, extra)
	h := w.Header()
	for key, values := range headers {
		for _, v := range values {
			h.Add(key, v)
		}
	}
}

// decodedBody is what a POST body says, decoded once (Edge.params), and
// what follows from the body alone: the cost of its operation, which the
// limits extension computes the first time (0 until then, else cost + 1).
type decodedBody struct {
	params    graphql.RawParams
	rawVars   json.RawMessage // the variables as sent, for the response cache's key
	costPlus1 atomic.Int64
}

// decodeParams returns the GraphQL parameters of a JSON POST body, decoded
// once per distinct body (m) and copied for each request, variables and
// extensions included: gqlgen's coercion of variables writes into the maps
// of input objects, so no request is given the memo's own maps.
func decodeParams(m *memo[*decodedBody], body []byte) (*graphql.RawParams, *decodedBody, *RequestError) {
	d, err := sharedParams(m, body)
	if err != nil {
		return nil, nil, err
	}
	c := d.params
	c.Variables = cloneJSONMap(d.params.Variables)
	c.Extensions = cloneJSONMap(d.params.Extensions)
	return &c, d, nil
}

// sharedParams is decodeParams without the copy, for readers that change
// nothing (the guard).
func sharedParams(m *memo[*decodedBody], body []byte) (*decodedBody, *RequestError) {
	d, ok := m.getBytes(body)
	if !ok {
		w, err := decodeBody(body)
		if err != nil {
			return nil, err
		}
		d = &decodedBody{params: w.params, rawVars: w.rawVars}
		m.put(string(body), d)
	}
	return d, nil
}

// cloneJSONMap copies a decoded JSON object and every object and array in
// it; other values are immutable.
func cloneJSONMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneJSON(v)
	}
	return c
}

func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneJSONMap(v)
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = cloneJSON(e)
		}
		return c
	}
	return v
}

// statusFor is the status of a request that failed before execution: 400
// (application/graphql-response+json) or 422 (application/json) for
// protocol errors, 200 otherwise.
func statusFor(contentType string, errs gqlerror.List) int {
	if errcode.GetErrorKind(errs) != errcode.KindProtocol {
		return http.StatusOK
	}
	if contentType == contentTypeGraphQLResponse {
		return http.StatusBadRequest
	}
	return http.StatusUnprocessableEntity
}

// writeRequestError writes the refusal of a malformed request.
func writeRequestError(w io.Writer, e *RequestError) {
	var b bytes.Buffer
	writeRefusalBody(&b, CodeBadRequest, e.Error(), e.extensions())
	_, _ = w.Write(b.Bytes())
}

func writeJSONError(w io.Writer, msg string) {
	writeRequestErrors(w, &graphql.Response{Errors: gqlerror.List{{Message: msg}}})
}

// requestErrors is the response to a request that failed before it was
// executed (it did not decode, parse or validate, or a limit refused it):
// the GraphQL specification's "request error", which has no data entry at
// all (section 7.1.2), unlike an execution that produced null.
type requestErrors struct {
	Errors     gqlerror.List  `json:"errors"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// writeRequestErrors writes resp's errors and extensions, without data.
func writeRequestErrors(w io.Writer, resp *graphql.Response) {
	b, err := json.Marshal(requestErrors{Errors: resp.Errors, Extensions: resp.Extensions})
	if err != nil {
		panic(fmt.Errorf("unable to marshal errors: %w", err))
	}
	_, _ = w.Write(b)
}

// writeJSON writes resp with json.Marshal, as gqlgen does.
func writeJSON(w io.Writer, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		panic(fmt.Errorf("unable to marshal %s: %w", string(resp.Data), err))
	}
	_, _ = w.Write(b)
}

var (
	dataOpen       = []byte(`{"data":`)
	extensionsOpen = []byte(`,"extensions":`)
	responseClose  = []byte(`}`)
)

// writeResponse writes resp as json.Marshal would: in one pass when it has
// data and no errors (extensions, such as the query's cost, are small and
// are encoded with json.Marshal, which sorts their keys as it does inside
// the whole response).
func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	if len(resp.Errors) > 0 || len(resp.Data) == 0 || resp.Label != "" || resp.Path != nil || resp.HasNext != nil {
		writeJSON(w, resp)
		return
	}
	var ext []byte
	if len(resp.Extensions) > 0 {
		var err error
		if ext, err = json.Marshal(resp.Extensions); err != nil {
			writeJSON(w, resp)
			return
		}
	}
	// A page of search hits has hundreds of characters to escape (the
	// <mark>s of its snippets): the escaped data is made in a pooled
	// buffer and written at once, not a write per escape through the
	// server's layers of response writers.
	data := resp.Data
	buf := graph.PooledBuffer()
	defer graph.PutBuffer(buf)
	if appendEscaped(buf, data) {
		data = buf.Bytes()
	}
	n := len(dataOpen) + len(data) + len(responseClose)
	if ext != nil {
		n += len(extensionsOpen) + len(ext)
	}
	w.Header().Set("Content-Length", strconv.Itoa(n))
	_, _ = w.Write(dataOpen)
	_, _ = w.Write(data)
	if ext != nil {
		_, _ = w.Write(extensionsOpen)
		_, _ = w.Write(ext)
	}
	_, _ = w.Write(responseClose)
}

// escapeStarts are the first bytes of what encoding/json escapes in
// compact JSON: <, > and & become \u003c, \u003e and \u0026; U+2028 and
// U+2029 (E2 80 A8, E2 80 A9) become \u2028 and \u2029. In JSON they only
// occur inside strings.
var escapeStarts = [...]byte{'<', '>', '&', 0xE2}

const hexDigits = "0123456789abcdef"

// appendEscaped appends b to out with what encoding/json escapes escaped,
// and reports true; when b has nothing to escape it appends nothing and
// reports false.
func appendEscaped(out *bytes.Buffer, b []byte) bool {
	var next [len(escapeStarts)]int
	for k, c := range escapeStarts {
		next[k] = bytes.IndexByte(b, c)
	}
	i, found := 0, false
	for {
		k := -1
		for j, at := range next {
			if at >= 0 && (k < 0 || at < next[k]) {
				k = j
			}
		}
		if k < 0 {
			break
		}
		at := next[k]
		if j := bytes.IndexByte(b[at+1:], escapeStarts[k]); j >= 0 {
			next[k] = at + 1 + j
		} else {
			next[k] = -1
		}
		var u [6]byte
		size := 1
		switch {
		case escapeStarts[k] != 0xE2:
			u = [6]byte{'\\', 'u', '0', '0', hexDigits[b[at]>>4], hexDigits[b[at]&0xF]}
		case at+2 < len(b) && b[at+1] == 0x80 && (b[at+2] == 0xA8 || b[at+2] == 0xA9):
			u = [6]byte{'\\', 'u', '2', '0', '2', hexDigits[b[at+2]&0xF]}
			size = 3
		default:
			continue
		}
		out.Write(b[i:at])
		out.Write(u[:])
		i, found = at+size, true
	}
	if found {
		out.Write(b[i:])
	}
	return found
}
