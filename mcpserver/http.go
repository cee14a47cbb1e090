package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib"
)

// HandlerOptions configure the Streamable HTTP endpoint (NewHandler).
type HandlerOptions struct {
	// Authenticate identifies the sender of a request by its bearer token,
	// as the GraphQL edge does (admin.Auth.Authenticate): a token that is
	// not valid is refused with 401 before any tool runs, never taken as
	// anonymous. Nil: every request is an anonymous reader.
	Authenticate func(*http.Request) (*http.Request, error)
	// WWWAuthenticate is the header sent with a 401.
	WWWAuthenticate string
	// MaxBody bounds a request's body in bytes (the GraphQL edge's
	// Limits.MaxBody): a larger one is refused with 413. It must be
	// positive.
	MaxBody int64
}

// caller is the identity of the HTTP request a tool call came in, which
// the in-process executor gives the GraphQL request it makes.
type caller struct {
	header     http.Header
	remoteAddr string
}

type callerKey struct{}

// NewHandler is the MCP Streamable HTTP endpoint of serve (/mcp): the
// tools, each a GraphQL query handed in-process to graphql, serve's own
// /graphql handler with its edge (limits, cost, rate, tokens, trusted
// documents, prod rules), under the caller's headers and address, so
// that every rule of the edge applies to a tool call as to the same
// query sent to /graphql. The endpoint is stateless (the SDK's
// StreamableHTTPOptions.Stateless): each POST is a whole exchange, no
// session is kept between requests, so any replica behind a load
// balancer answers any request; GET (a server-to-client stream) and
// DELETE answer 405. Responses are application/json, not event streams
// (the tools send no notifications).
func NewHandler(graphql http.Handler, opts HandlerOptions) (http.Handler, error) {
	if graphql == nil {
		return nil, fmt.Errorf("the MCP endpoint needs the GraphQL handler")
	}
	if opts.MaxBody <= 0 {
		return nil, fmt.Errorf("the MCP endpoint's body limit must be positive, got %d bytes", opts.MaxBody)
	}
	srv := New(&GraphQLHTTP{
		URL:     "http://in-process/graphql",
		Do:      inProcess(graphql),
		Prepare: asCaller,
	})
	// The SDK's DNS-rebinding guard (a loopback connection with another
	// Host is refused) is off: it would refuse every request a reverse
	// proxy on the same machine forwards, and the tools read nothing that
	// /graphql, which has no such guard, does not serve to the same
	// request; browsers are held by the CORS allow-list of the edge.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: opts.MaxBody, DisableLocalhostProtection: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.Authenticate != nil {
			ar, err := opts.Authenticate(r)
			if err != nil {
				w.Header().Set("WWW-Authenticate", opts.WWWAuthenticate)
				writeRefusal(w, http.StatusUnauthorized, incidentlib.EUNAUTHENTICATED, incidentlib.ErrorMessage(err))
				return
			}
			r = ar
		}
		c := caller{header: r.Header.Clone(), remoteAddr: r.RemoteAddr}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}), nil
}

// writeRefusal answers a request refused before MCP reads it, as a
// JSON-RPC error without an id carrying the library's code.
func writeRefusal(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32001, "message": code + ": " + msg, "data": map[string]string{"code": code}}})
}

// asCaller gives the in-process GraphQL request the headers and address
// of the MCP request it serves: its bearer token (authenticated again by
// the edge, which keys the rate limit by it), its forwarded-for header,
// Accept-Language and trace context. The headers that describe the MCP
// request's own body are not copied.
func asCaller(ctx context.Context, req *http.Request) {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok {
		return
	}
	for k, v := range c.header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Type", "Content-Length", "Accept", "Accept-Encoding", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id":
			continue
		}
		req.Header[k] = v
	}
	req.RemoteAddr = c.remoteAddr
}

// inProcess sends a request to h within the process and returns its
// response.
func inProcess(h http.Handler) func(*http.Request) (*http.Response, error) {
	return func(req *http.Request) (*http.Response, error) {
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, req)
		return &http.Response{StatusCode: rec.status, Header: rec.header, Body: io.NopCloser(&rec.body), Request: req}, nil
	}
}

// recorder is the http.ResponseWriter of an in-process request. The
// edge bounds what it writes (the page size and the cost limit), and
// GraphQLHTTP reads at most its MaxResponseBytes of it.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

func (r *recorder) Flush() {}
