package server

import (
	"net/http"

	"github.com/incidentlib/incidentlib/mcpserver"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// mountMCP serves the MCP tools (mcpserver) at /mcp over the Streamable
// HTTP transport, unless cfg.NoMCP. The tools are GraphQL queries handed
// to graphql, the /graphql handler with its edge, under the caller's
// token and address: the limits, cost, rate, roles, trusted documents
// and prod rules of /graphql are theirs. The request log, metrics and
// CORS of every path (Edge.Around, Server.ServeHTTP) wrap /mcp as they
// wrap /graphql. Read-only: there is no mutation tool.
func mountMCP(mux *http.ServeMux, graphql http.Handler, authenticate func(*http.Request) (*http.Request, error), cfg Config) error {
	if cfg.NoMCP {
		return nil
	}
	maxBody := cfg.Limits.MaxBody
	if maxBody <= 0 {
		maxBody = gqledge.DefaultMaxBody
	}
	h, err := mcpserver.NewHandler(graphql, mcpserver.HandlerOptions{
		Authenticate: authenticate, WWWAuthenticate: gqledge.WWWAuthenticate, MaxBody: maxBody,
	})
	if err != nil {
		return err
	}
	mux.Handle("/mcp", h)
	return nil
}

// trustedDocuments are the edge's trusted documents: cfg's manifest, and
// while /mcp is on the MCP tools' own documents (mcpserver.Documents), so
// that the tools run under --trusted-documents by the edge's one rule
// (gqledge/trusted.go), over /mcp and for incidentlib mcp's stdio client
// reading this server alike. With /mcp off (cfg.NoMCP) only the manifest
// counts: turning MCP off refuses its documents on /graphql too. They
// are read-only queries under every rule of /graphql (cost, rate, roles),
// which any client may send once they are listed.
func trustedDocuments(cfg Config) *gqledge.TrustedDocuments {
	if cfg.TrustedDocuments == nil || cfg.NoMCP {
		return cfg.TrustedDocuments
	}
	return cfg.TrustedDocuments.With(mcpserver.Documents())
}
