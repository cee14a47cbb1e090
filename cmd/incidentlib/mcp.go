package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib/mcpserver"
)

// runMCP is incidentlib mcp: the library's MCP tools (mcpserver) over
// stdio, for a desktop assistant that starts the binary, reading a
// running library through its GraphQL API (--server) with the pooled
// keep-alive client (outbound), as the reader --token names or an
// anonymous one. Every tool is a GraphQL query to that server, whose
// edge applies its limits, cost, rate and roles as to any client.
func runMCP(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	f := newFlags("mcp", getenv, stderr)
	serverURL := addServerFlag(f, "the running library to read, such as http://127.0.0.1:8080 (required)", true)
	token := f.str("token", "", "an API token of the library to read as (optional: without it, an anonymous reader; prefer the environment variable: flags show in ps)")
	timeout := f.duration("timeout", 30*time.Second, false, "how long one GraphQL request to --server may take")
	maxResponse := f.bytes("max-response", mcpserver.DefaultMaxResponseBytes, false, "the largest GraphQL response read from --server, in bytes (B, KiB, MiB)")
	f.checks = append(f.checks, func() error {
		if strings.ContainsAny(*token, " \t\r\n") {
			return fmt.Errorf("--token must not hold white space")
		}
		if *maxResponse < 1<<10 {
			return fmt.Errorf("--max-response must be at least 1KiB, got %s", maxResponse)
		}
		return nil
	})
	if err := f.parse(args); err != nil {
		return err
	}
	client, err := outboundClient(*timeout, int64(*maxResponse)+1, "incidentlib-mcp/1")
	if err != nil {
		return err
	}
	defer client.Close()
	exec := &mcpserver.GraphQLHTTP{
		URL:              strings.TrimRight(*serverURL, "/") + "/graphql",
		Do:               client.Do,
		MaxResponseBytes: int64(*maxResponse),
		Prepare: func(_ context.Context, req *http.Request) {
			if *token != "" {
				req.Header.Set("Authorization", "Bearer "+*token)
			}
		},
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := mcpserver.New(exec).Run(ctx, t); err != nil && ctx.Err() == nil && err != io.EOF {
		return err
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (w nopWriteCloser) Close() error { return nil }
