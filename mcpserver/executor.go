package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
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
// Both are the same requests through the same edge.
type GraphQLHTTP struct {
	// URL is the library's GraphQL endpoint, such as http://host:8080/graphql.
	URL string
	// Do sends the request.
	Do func(*http.Request) (*http.Response, error)
	// Prepare, if set, gives the request its caller's identity (the
	// bearer token, the client's address) before it is sent.
	Prepare func(ctx context.Context, req *http.Request)
	// MaxResponseBytes bounds the response read; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

var _ Executor = (*GraphQLHTTP)(nil)

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// Query implements Executor.
func (g *GraphQLHTTP) Query(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if g.Prepare != nil {
		g.Prepare(ctx, req)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	resp, err := g.Do(req)
	if err != nil {
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the library at %s did not answer: %v", g.URL, err)
	}
	defer resp.Body.Close()
	max := g.MaxResponseBytes
	if max <= 0 {
		max = DefaultMaxResponseBytes
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "reading the library's answer from %s: %v", g.URL, err)
	}
	if int64(len(raw)) > max {
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the library's answer is larger than %d bytes", max)
	}
	var r gqlResponse
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
