package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// Executor runs one GraphQL query of the library and decodes its data
// into out. Every tool reads the library through it and nothing else, so
// what a caller may see (withdrawn incidents, roles, limits, cost) is
// decided where GraphQL decides it. A refusal or a GraphQL error is an
// *incidentlib.Error whose code is the response's extensions.code
// (NOT_FOUND, INVALID, RATE_LIMITED, COST_LIMIT...): the first error's,
// even when the response carries partial data.
type Executor interface {
	Query(ctx context.Context, query string, vars map[string]any, out any) error
}

// DefaultMaxResponseBytes bounds one GraphQL response a tool reads: 8 MiB.
const DefaultMaxResponseBytes = 8 << 20

// GraphQLHTTP is the Executor over GraphQL-over-HTTP: a POST of the query
// to URL, sent by Do. incidentlib mcp sends it to a running library with
// the outbound client (Remote); serve's /mcp hands it to its own
// /graphql handler in-process with the caller's identity (NewHandler).
// Both are the same requests through the same edge. The binary's commands
// that write to a running server (import --server, token, seeds) send
// theirs through its Send too, with their own reading of the answer.
type GraphQLHTTP struct {
	// URL is the library's GraphQL endpoint, such as http://host:8080/graphql.
	URL string
	// Do sends the request.
	Do func(*http.Request) (*http.Response, error)
	// Prepare, if set, gives the request its caller's identity (the
	// bearer token, the client's address) before it is sent; it may
	// replace the headers Send sets.
	Prepare func(ctx context.Context, req *http.Request)
	// MaxResponseBytes bounds the response read; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

var _ Executor = (*GraphQLHTTP)(nil)

// Response is a GraphQL response's body: its data and its errors, each
// with the code the library puts in extensions.code.
type Response struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// ErrResponseTooLarge is Send's error for an answer larger than
// MaxResponseBytes.
var ErrResponseTooLarge = errors.New("the answer is larger than the bound")

// Send POSTs the query with its variables to URL as JSON, through Prepare
// and Do, and reads the answer, at most MaxResponseBytes of it. An error
// with a nil response is Do's: no answer came. An error with a response
// is a failed read of the answer's body, or ErrResponseTooLarge.
func (g *GraphQLHTTP) Send(ctx context.Context, query string, vars map[string]any) (*http.Response, []byte, error) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	if g.Prepare != nil {
		g.Prepare(ctx, req)
	}
	resp, err := g.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	max := g.maxResponse()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return resp, nil, err
	}
	if int64(len(raw)) > max {
		return resp, nil, ErrResponseTooLarge
	}
	return resp, raw, nil
}

// maxResponse is MaxResponseBytes, or its default.
func (g *GraphQLHTTP) maxResponse() int64 {
	if g.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return g.MaxResponseBytes
}

// Query implements Executor.
func (g *GraphQLHTTP) Query(ctx context.Context, query string, vars map[string]any, out any) error {
	resp, raw, err := g.Send(ctx, query, vars)
	switch {
	case errors.Is(err, ErrResponseTooLarge):
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the library's answer is larger than %d bytes", g.maxResponse())
	case err != nil && resp != nil:
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "reading the library's answer from %s: %v", g.URL, err)
	case err != nil:
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the library at %s did not answer: %v", g.URL, err)
	}
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the library at %s answered HTTP %d, not GraphQL", g.URL, resp.StatusCode)
	}
	if len(r.Errors) > 0 {
		e := r.Errors[0]
		return incidentlib.Errorf(toolCode(e.Extensions.Code), "%s", e.Message)
	}
	if resp.StatusCode != http.StatusOK || len(r.Data) == 0 || string(r.Data) == "null" {
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the library at %s answered HTTP %d without data", g.URL, resp.StatusCode)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("decoding the library's data: %w", err)
	}
	return nil
}

// toolCode is the code a tool error carries for a GraphQL error code:
// the library's own codes as they are; what gqlgen says of a document or
// a variable the client sent (an argument of the tool) is INVALID; no
// code is INTERNAL.
func toolCode(code string) string {
	switch code {
	case "":
		return incidentlib.EINTERNAL
	case "GRAPHQL_VALIDATION_FAILED", "GRAPHQL_PARSE_FAILED", "BAD_USER_INPUT":
		return incidentlib.EINVALID
	}
	return strings.ToUpper(code)
}
