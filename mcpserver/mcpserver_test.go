package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/mcpserver"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
)

const adminToken = "mcp-test-admin-token-0123456789abcdef"

// library serves the seed incidents with search, as serve does, and
// returns the server and the store.
func library(t *testing.T, cfg server.Config) (*httptest.Server, *storage.DB) {
	t.Helper()
	db := testutil.OpenSeeded(t, storage.Options{})
	if cfg.ResponseCacheBytes == 0 {
		cfg.ResponseCacheBytes = -1
	}
	cfg.AdminToken = adminToken
	hs, _ := testutil.ServerTest(t, db, cfg, testutil.ServerParts{Search: testutil.OpenSearch(t, db)})
	return hs, db
}

// bearer adds a bearer token to every request of a client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens an MCP session on url's /mcp with the SDK's client, as
// the reader token names (empty: anonymous).
func connect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token, http.DefaultTransport}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "incidentlib-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustConnect(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := connect(t, url, token)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// call calls a tool and returns its result, failing on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v", tool, args, err)
	}
	return res
}

// textOf is the text of a result's content.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ok decodes a successful result's structured content into out.
func ok(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", textOf(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// toolErr asserts a tool error (isError, not a protocol error) whose text
// starts with code.
func toolErr(t *testing.T, res *mcp.CallToolResult, code string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error %s, got success: %.300s", code, textOf(res))
	}
	if txt := textOf(res); !strings.HasPrefix(txt, code+": ") {
		t.Fatalf("want the tool error's text to start with %s, got %q", code, txt)
	}
}

// TestToolsList: the tools are exactly mcpserver.ToolNames, each with an
// input and an output schema; every filter argument's schema holds every
// field of the GraphQL schema's IncidentFilter (so a field added there
// reaches the tools), and lang takes EN and KO in either case.
func TestToolsList(t *testing.T) {
	hs, _ := library(t, server.Config{})
	cs := mustConnect(t, hs.URL, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	filterFields := graph.NewExecutableSchema(graph.Config{}).Schema().Types["IncidentFilter"].Fields
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s is not marked read-only", tool.Name)
		}
		in, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties map[string]json.RawMessage
			Defs       map[string]struct {
				Properties map[string]json.RawMessage
			} `json:"$defs"`
		}
		if err := json.Unmarshal(in, &schema); err != nil {
			t.Fatal(err)
		}
		if lang, ok := schema.Properties["lang"]; ok {
			for _, v := range []string{`"EN"`, `"KO"`, `"en"`, `"ko"`} {
				if !strings.Contains(string(lang), v) {
					t.Errorf("%s: lang's schema %s does not take %s", tool.Name, lang, v)
				}
			}
		}
		if _, ok := schema.Properties["filter"]; ok {
			def := schema.Defs["IncidentFilter"]
			for _, f := range filterFields {
				if _, ok := def.Properties[f.Name]; !ok {
					t.Errorf("%s: filter's schema lacks IncidentFilter.%s", tool.Name, f.Name)
				}
			}
		}
	}
	if !slices.Equal(names, slices.Sorted(slices.Values(mcpserver.ToolNames))) { // listed by name
		t.Fatalf("tools %v, want %v", names, mcpserver.ToolNames)
	}
	args := map[string][]string{"search_incidents": {"query", "filter", "lang", "first"}, "get_incident": {"id", "lang"},
		"similar_incidents": {"id", "description", "lang", "first"}, "library_stats": {"filter"}}
	for _, tool := range res.Tools {
		in, _ := json.Marshal(tool.InputSchema)
		var schema struct{ Properties map[string]any }
		_ = json.Unmarshal(in, &schema)
		for _, a := range args[tool.Name] {
			if _, ok := schema.Properties[a]; !ok {
				t.Errorf("%s has no argument %s", tool.Name, a)
			}
		}
	}
}

// TestToolsOnSeeds: each tool's happy path over the seed incidents.
func TestToolsOnSeeds(t *testing.T) {
	hs, _ := library(t, server.Config{})
	cs := mustConnect(t, hs.URL, "")
	t.Run("SearchQuery", func(t *testing.T) {
		var out mcpserver.SearchResult
		ok(t, call(t, cs, "search_incidents", map[string]any{"query": "Consul", "lang": "en", "first": 5}), &out)
		if out.TotalCount < 1 || out.Incidents[0].Incident.ID != "IL-0213" || len(out.Incidents[0].Highlights) == 0 {
			t.Fatalf("search Consul: %+v", out)
		}
	})
	t.Run("SearchFilterOnly", func(t *testing.T) {
		var all, some mcpserver.SearchResult
		ok(t, call(t, cs, "search_incidents", map[string]any{"first": 100}), &all)
		ok(t, call(t, cs, "search_incidents", map[string]any{"filter": map[string]any{"organizations": []string{"roblox"}}}), &some)
		if all.TotalCount < 6 || some.TotalCount != 1 || some.Incidents[0].Incident.ID != "IL-0213" {
			t.Fatalf("all %d, roblox %+v", all.TotalCount, some)
		}
	})
	t.Run("GetKorean", func(t *testing.T) {
		res := call(t, cs, "get_incident", map[string]any{"id": "IL-0213", "lang": "ko"})
		var inc mcpserver.Incident
		ok(t, res, &inc)
		if inc.ID != "IL-0213" || !strings.Contains(inc.Title, "클러스터") || inc.Org != "Roblox" {
			t.Fatalf("incident %+v", inc)
		}
		md := textOf(res)
		if !strings.HasPrefix(md, "# IL-0213: ") || !strings.Contains(md, "## Summary") {
			t.Fatalf("markdown:\n%s", md)
		}
	})
	t.Run("SimilarByID", func(t *testing.T) {
		var out mcpserver.SimilarResult
		ok(t, call(t, cs, "similar_incidents", map[string]any{"id": "IL-0215"}), &out)
		if out.Basis != "id" || out.Of == nil || out.Of.ID != "IL-0215" || len(out.Incidents) == 0 || out.Incidents[0].Via != "terms" {
			t.Fatalf("similar: %+v", out)
		}
	})
	t.Run("SimilarByDescription", func(t *testing.T) {
		var out mcpserver.SimilarResult
		ok(t, call(t, cs, "similar_incidents", map[string]any{"description": "Our Consul cluster is slow and the KV writes take 2 seconds"}), &out)
		if out.Basis != "description" || len(out.Incidents) == 0 || out.Incidents[0].Incident.ID != "IL-0213" || out.Incidents[0].Via != "text" {
			t.Fatalf("similar by description: %+v", out)
		}
		if slices.Contains(out.Words, "the") || !slices.Contains(out.Words, "consul") {
			t.Fatalf("words %v", out.Words)
		}
	})
	t.Run("SimilarByDescriptionNothing", func(t *testing.T) {
		var out mcpserver.SimilarResult
		ok(t, call(t, cs, "similar_incidents", map[string]any{"description": "zzqqxx wwvvkk"}), &out)
		if out.Basis != "description" || out.Of != nil || out.Incidents == nil || len(out.Incidents) != 0 {
			t.Fatalf("similar to nothing: %+v", out)
		}
	})
	t.Run("Stats", func(t *testing.T) {
		var all, roblox mcpserver.Stats
		ok(t, call(t, cs, "library_stats", map[string]any{}), &all)
		ok(t, call(t, cs, "library_stats", map[string]any{"filter": map[string]any{"organizations": []string{"roblox"}}}), &roblox)
		if all.Count < 6 || roblox.Count != 1 || len(all.Terms) == 0 || len(all.Years) == 0 {
			t.Fatalf("stats %+v; roblox %+v", all, roblox)
		}
	})
}

// TestToolErrors: a client's mistakes are tool errors (isError) carrying
// the library's code, never protocol errors.
func TestToolErrors(t *testing.T) {
	hs, _ := library(t, server.Config{})
	cs := mustConnect(t, hs.URL, "")
	cases := []struct {
		name, tool string
		args       map[string]any
		code       string
	}{
		{"UnknownID", "get_incident", map[string]any{"id": "IL-9999"}, incidentlib.ENOTFOUND},
		{"SimilarUnknownID", "similar_incidents", map[string]any{"id": "IL-9999"}, incidentlib.ENOTFOUND},
		{"NoID", "get_incident", map[string]any{}, incidentlib.EINVALID},
		{"BadLang", "get_incident", map[string]any{"id": "IL-0213", "lang": "fr"}, incidentlib.EINVALID},
		{"BothIDAndDescription", "similar_incidents", map[string]any{"id": "IL-0213", "description": "slow"}, incidentlib.EINVALID},
		{"NeitherIDNorDescription", "similar_incidents", map[string]any{}, incidentlib.EINVALID},
		{"UnknownFilterField", "search_incidents", map[string]any{"filter": map[string]any{"colour": "red"}}, incidentlib.EINVALID},
		{"FilterFieldWrongType", "library_stats", map[string]any{"filter": map[string]any{"organizations": "roblox"}}, incidentlib.EINVALID},
		{"FirstTooLarge", "search_incidents", map[string]any{"first": 1000}, incidentlib.EINVALID},
		{"MalformedQuery", "search_incidents", map[string]any{"query": `"unclosed`}, incidentlib.EBADQUERY},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			toolErr(t, call(t, cs, c.tool, c.args), c.code)
		})
	}
}

// TestWithdrawnAndTokens: a withdrawn incident leaves search_incidents'
// and library_stats' answers as it leaves GraphQL's lists, unless the
// filter names WITHDRAWN, and get_incident reads it by id as
// Query.incident does; a token that is not valid is refused before any
// tool runs, and a valid one reads.
func TestWithdrawnAndTokens(t *testing.T) {
	hs, db := library(t, server.Config{})
	testutil.PostGraphQL(t, hs, map[string]any{"query": `mutation { withdrawIncident(id: "IL-0213", reason: "duplicate") { incident { id } } }`},
		"Authorization", "Bearer "+adminToken)
	cs := mustConnect(t, hs.URL, "")
	var out mcpserver.SearchResult
	ok(t, call(t, cs, "search_incidents", map[string]any{"query": "Consul"}), &out)
	if out.TotalCount != 0 {
		t.Fatalf("a withdrawn incident found by an anonymous search: %+v", out)
	}
	ok(t, call(t, cs, "search_incidents", map[string]any{"query": "Consul", "filter": map[string]any{"reviewStates": []string{"WITHDRAWN"}}}), &out)
	if out.TotalCount != 1 {
		t.Fatalf("a search naming WITHDRAWN: %+v", out)
	}
	// Every tool, by name: a tool added to ToolNames without a case here
	// fails, so that none forgets the rule.
	hides := map[string]func(t *testing.T) bool{
		"search_incidents": func(t *testing.T) bool {
			var out mcpserver.SearchResult
			ok(t, call(t, cs, "search_incidents", map[string]any{"first": 100}), &out)
			return !slices.ContainsFunc(out.Incidents, func(h mcpserver.SearchHit) bool { return h.Incident.ID == "IL-0213" })
		},
		"similar_incidents": func(t *testing.T) bool {
			var byText, byTerms mcpserver.SimilarResult
			ok(t, call(t, cs, "similar_incidents", map[string]any{"description": "consul roblox", "first": 20}), &byText)
			ok(t, call(t, cs, "similar_incidents", map[string]any{"id": "IL-0214", "first": 20}), &byTerms)
			has := func(h mcpserver.SimilarHit) bool { return h.Incident.ID == "IL-0213" }
			return !slices.ContainsFunc(byText.Incidents, has) && !slices.ContainsFunc(byTerms.Incidents, has)
		},
		"library_stats": func(t *testing.T) bool {
			var st mcpserver.Stats
			ok(t, call(t, cs, "library_stats", map[string]any{"filter": map[string]any{"organizations": []string{"roblox"}}}), &st)
			return st.Count == 0
		},
		// get_incident reads by id: a withdrawn incident is readable, as
		// Query.incident reads it (below).
		"get_incident": func(*testing.T) bool { return true },
	}
	for _, name := range mcpserver.ToolNames {
		t.Run("Hides/"+name, func(t *testing.T) {
			h, found := hides[name]
			if !found {
				t.Fatalf("no withdrawn-incident case for the tool %s", name)
			}
			if !h(t) {
				t.Fatalf("%s shows a withdrawn incident to an anonymous caller", name)
			}
		})
	}
	var stats, withdrawn mcpserver.Stats
	ok(t, call(t, cs, "library_stats", map[string]any{"filter": map[string]any{"organizations": []string{"roblox"}}}), &stats)
	ok(t, call(t, cs, "library_stats", map[string]any{"filter": map[string]any{"organizations": []string{"roblox"}, "reviewStates": []string{"WITHDRAWN"}}}), &withdrawn)
	if stats.Count != 0 || withdrawn.Count != 1 {
		t.Fatalf("stats counted %d (want 0), naming WITHDRAWN %d (want 1)", stats.Count, withdrawn.Count)
	}
	var inc mcpserver.Incident
	ok(t, call(t, cs, "get_incident", map[string]any{"id": "IL-0213"}), &inc)
	if inc.ReviewState != "WITHDRAWN" || inc.WithdrawnReason != "duplicate" {
		t.Fatalf("by id: %+v", inc)
	}

	t.Run("BadToken", func(t *testing.T) {
		if _, err := connect(t, hs.URL, "not-a-token-of-this-library"); err == nil {
			t.Fatal("a session with a token that is not valid")
		}
		resp, _ := postMCP(t, hs.URL, toolsList, "Authorization", "Bearer not-a-token-of-this-library")
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("EditorToken", func(t *testing.T) {
		cs := mustConnect(t, hs.URL, testutil.APIToken(t, db, "mcp-editor", incidentlib.RoleEditor))
		var inc mcpserver.Incident
		ok(t, call(t, cs, "get_incident", map[string]any{"id": "IL-0214"}), &inc)
		if inc.ID != "IL-0214" {
			t.Fatalf("%+v", inc)
		}
	})
}

// TestMCPBehindTheEdge: a tool's query is counted by the edge's rate
// limit under the caller's token: a client that has spent its cost gets
// RATE_LIMITED, another token is not held back by it. And /mcp is not
// served with NoMCP (serve --mcp=false).
func TestMCPBehindTheEdge(t *testing.T) {
	hs, db := library(t, server.Config{Limits: gqledge.Limits{MaxCost: 1000, MaxBody: 16 << 10}, RateLimit: gqledge.RateLimit{CostPerSecond: 0.001, Burst: 1000}})
	a := mustConnect(t, hs.URL, testutil.APIToken(t, db, "mcp-a", incidentlib.RoleEditor))
	b := mustConnect(t, hs.URL, testutil.APIToken(t, db, "mcp-b", incidentlib.RoleEditor))
	limited := false
	for range 300 {
		res := call(t, a, "search_incidents", map[string]any{"first": 20})
		if res.IsError {
			toolErr(t, res, gqledge.CodeRateLimited)
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("300 calls never reached the rate limit")
	}
	var out mcpserver.SearchResult
	ok(t, call(t, b, "search_incidents", map[string]any{"first": 1}), &out)

	// The server's request metric names /mcp, and its operation metric
	// counts the tools' GraphQL operations.
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `incidentlib_http_requests_total{code="200",path="/mcp"}`) {
		t.Fatalf("no /mcp requests in the metrics:\n%s", grepLines(string(body), "http_requests_total"))
	}

	t.Run("BodyTooLarge", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_incidents","arguments":{"query":"` + strings.Repeat("a", 20<<10) + `"}}}`
		if resp, _ := postMCP(t, hs.URL, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("a body over Limits.MaxBody: %d", resp.StatusCode)
		}
	})
	t.Run("BehindAProxyOnLoopback", func(t *testing.T) {
		// A reverse proxy on the same machine forwards the public Host.
		if resp, _ := postMCP(t, hs.URL, toolsList, "Host", "incidents.example"); resp.StatusCode != http.StatusOK {
			t.Fatalf("a loopback request for another host: %d", resp.StatusCode)
		}
	})
	t.Run("Off", func(t *testing.T) {
		hs, _ := library(t, server.Config{NoMCP: true})
		if _, err := connect(t, hs.URL, ""); err == nil {
			t.Fatal("an MCP session with NoMCP")
		}
		resp, err := http.Post(hs.URL+"/mcp", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("/mcp with NoMCP: %d", resp.StatusCode)
		}
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMCPCORS: /mcp is behind the CORS allow-list of every path: a
// browser's preflight from an allowed origin may send the MCP protocol
// version header, and the answer to its POST names the origin.
func TestMCPCORS(t *testing.T) {
	const origin = "https://assistant.example"
	hs, _ := library(t, server.Config{CORSOrigins: []string{origin}})
	req, _ := http.NewRequest(http.MethodOptions, hs.URL+"/mcp", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	if resp.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(allowed, "mcp-protocol-version") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body := postMCP(t, hs.URL, toolsList, "Origin", origin)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(string(body), "search_incidents") {
		t.Fatalf("POST: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// toolsList is a JSON-RPC tools/list request.
const toolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// postMCP POSTs body to url's /mcp as a Streamable HTTP client would, with
// the header name and value pairs given ("Host" sets the request's host),
// and returns the response and its body.
func postMCP(t *testing.T, url, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}
