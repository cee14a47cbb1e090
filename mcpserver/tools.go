package mcpserver

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib"
)

// The tools' names: the one list the server registers and the tests
// enumerate.
const (
	ToolSearchIncidents = "search_incidents"
	ToolGetIncident     = "get_incident"
	ToolSimilar         = "similar_incidents"
	ToolLibraryStats    = "library_stats"
)

// ToolNames are every tool the server offers (tools/list gives them by name).
var ToolNames = []string{ToolSearchIncidents, ToolGetIncident, ToolSimilar, ToolLibraryStats}

// Lang is a tool's language argument: EN or KO, in either case; empty
// leaves the choice to the library (the request's Accept-Language, else
// English).
type Lang string

// graphQL is the GraphQL Lang value of l, or nil for none.
func (l Lang) graphQL() any {
	if l == "" {
		return nil
	}
	return strings.ToUpper(string(l))
}

// New builds the MCP server of the library's read-only tools over exec:
// every tool is GraphQL queries through exec and nothing else. The
// handshake gives the binary's module version.
func New(exec Executor) *mcp.Server {
	version := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "incidentlib", Title: "incidentlib postmortem library", Version: version},
		&mcp.ServerOptions{Instructions: "A library of public incident postmortems, in English and Korean. " +
			"search_incidents finds incidents by words and taxonomy filters; get_incident reads one; " +
			"similar_incidents finds past incidents like an incident id or like a description of what is happening now; " +
			"library_stats counts incidents by year, term and organization."})
	t := tools{exec: exec}
	defs := filterDefs()
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}
	mcp.AddTool(s, &mcp.Tool{Name: ToolSearchIncidents, Title: "Search incidents", Annotations: readOnly,
		Description: "Incidents whose English or Korean text matches query (every word must match; \"exact phrase\", -excluded, title:/lessons:/org: prefixes), best first, " +
			"or without query the newest incidents; filter narrows either by the library's IncidentFilter (organizations, domains, symptoms, components, rootCauses, contributing, severities as taxonomy slugs; dateFrom/dateTo YYYY-MM-DD; ...). " +
			"Withdrawn incidents are left out unless filter.reviewStates names WITHDRAWN.",
		InputSchema: inputSchema[SearchArgs](defs), OutputSchema: outputSchema[SearchResult]()}, t.search)
	mcp.AddTool(s, &mcp.Tool{Name: ToolGetIncident, Title: "Read an incident", Annotations: readOnly,
		Description: "One incident by id (such as IL-0213): its summary, timeline, impact, causes, lessons, remediation and sources, as Markdown and as structured content. An unknown id is a NOT_FOUND error.",
		InputSchema: inputSchema[GetArgs](defs), OutputSchema: outputSchema[Incident]()}, t.get)
	mcp.AddTool(s, &mcp.Tool{Name: ToolSimilar, Title: "Similar incidents", Annotations: readOnly,
		Description: "Past incidents like one: give id (an incident of the library: ranked by the taxonomy terms they share, rare terms weighing more) " +
			"or description (free text about what is happening now: its words are searched one by one, the incidents matching the most words come first, then the incidents sharing the most terms with the best match). Give exactly one.",
		InputSchema: inputSchema[SimilarArgs](defs), OutputSchema: outputSchema[SimilarResult]()}, t.similar)
	mcp.AddTool(s, &mcp.Tool{Name: ToolLibraryStats, Title: "Library statistics", Annotations: readOnly,
		Description: "Counts over the incidents that match filter (all listed incidents without one): how many, per year, the most common terms of each taxonomy kind, the organizations with the most incidents, and detection and resolution times.",
		InputSchema: inputSchema[StatsArgs](defs), OutputSchema: outputSchema[Stats]()}, t.stats)
	s.AddReceivingMiddleware(codedToolErrors)
	return s
}

// langSchema is the JSON Schema of a Lang argument.
var langSchema = &jsonschema.Schema{Type: "string", Enum: []any{"EN", "KO", "en", "ko"},
	Description: "EN or KO (either case): the language of the text returned; omitted: English, or the other language where a text has no English."}

// tools holds the tools' handlers.
type tools struct{ exec Executor }

// codedToolErrors makes every tool error carry a code as its text's
// first word: the handlers' errors do ("NOT_FOUND: ..."); the SDK's own,
// for arguments that do not match the input schema, are the client's
// mistake and get INVALID.
func codedToolErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !r.IsError || r.GetError() != nil && isCoded(r.GetError()) {
			return res, err
		}
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok && !strings.HasPrefix(tc.Text, incidentlib.EINVALID+": ") {
				tc.Text = incidentlib.EINVALID + ": " + tc.Text
			}
		}
		return res, err
	}
}

// codedError is a handler's error, whose text starts with its code.
type codedError struct{ code, msg string }

func (e *codedError) Error() string { return e.code + ": " + e.msg }

func isCoded(err error) bool { _, ok := err.(*codedError); return ok }

// toolError is err as a tool error: the library's code and message (an
// internal error's message is never shown).
func toolError(err error) error {
	return &codedError{code: incidentlib.ErrorCode(err), msg: incidentlib.ErrorMessage(err)}
}

func invalid(format string, args ...any) error {
	return &codedError{code: incidentlib.EINVALID, msg: fmt.Sprintf(format, args...)}
}

// text is a tool result whose content is md (Markdown).
func text(md string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: md}}}
}

// decode is the GraphQL data of a query into T.
func query[T any](ctx context.Context, exec Executor, q string, vars map[string]any) (T, error) {
	var out T
	err := exec.Query(ctx, q, vars, &out)
	return out, err
}

// filterVar is a Filter as a GraphQL variable: nil stays absent.
func filterVar(f Filter) any {
	if f == nil {
		return nil
	}
	return map[string]any(f)
}
