package main

import "github.com/incidentlib/incidentlib/server"

// mcpFlags are serve's flags for the MCP endpoint (server/mcp.go).
type mcpFlags struct {
	on *bool
}

func addMCPFlags(f *flags) mcpFlags {
	return mcpFlags{on: f.boolean("mcp", true, "serve the MCP tools for assistants at /mcp (Streamable HTTP, stateless, read-only), behind the same limits, rate, tokens and CORS as /graphql (docs/agents.md); false: /mcp answers 404")}
}

func (m mcpFlags) config(cfg server.Config) server.Config {
	cfg.NoMCP = !*m.on
	return cfg
}
