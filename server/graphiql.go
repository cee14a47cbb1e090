package server

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"

	"github.com/incidentlib/incidentlib/graph"
)

// The playground: GraphiQL served from assets embedded in the binary, so it
// works without the internet. server/assets/graphiql holds the built UMD
// bundles of graphiql 4.1.2, react 18.2.0 and react-dom 18.2.0 exactly as
// the npm registry ships them (the same bytes, by SRI hash, that gqlgen's
// playground.Handler loads from a CDN); assets/README.md says how to
// update them. GraphiQL opens with example operations in tabs: a list
// page, an incident with its relations, facets, a write with its
// Authorization header, and search when the schema has it.

//go:embed assets/graphiql
var assetFS embed.FS

// graphiqlAssets are the vendored files with their SRI hashes (checked by
// TestGraphiQLAssets against the embedded bytes).
var graphiqlAssets = map[string]string{
	"graphiql.min.js":             "sha256-hnImuor1znlJkD/FOTL3jayfS/xsyNoP04abi8bFJWs=",
	"graphiql.min.css":            "sha256-MEh+B2NdMSpj9kexQNN3QKc8UzMrCXW/Sx/phcpuyIU=",
	"react.production.min.js":     "sha256-S0lp+k7zWUMk2ixteM6HZvu8L9Eh//OVrt+ZfbCpmgY=",
	"react-dom.production.min.js": "sha256-IXWO0ITNDjfnNXIu5POVfqlgYoop36bDzhodR6LW5Pc=",
}

// ExampleTab is one GraphiQL tab.
type ExampleTab struct {
	Query     string `json:"query"`
	Variables string `json:"variables,omitempty"`
	// Headers are the tab's request headers, JSON: a write's
	// Authorization, with TokenPlaceholder where the token goes.
	Headers string `json:"headers,omitempty"`
}

// TokenPlaceholder is what the write example's Authorization header holds
// until the user pastes a token.
const TokenPlaceholder = "PASTE_YOUR_TOKEN"

// exampleQueries are the tabs GraphiQL opens with; ExampleTabs adds search
// when the schema has it.
var exampleQueries = []ExampleTab{
	{Query: `# A list page: one query, one batched store read per level.
query ListPage($first: Int = 20) {
  incidents(first: $first) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      id date title
      organization { name incidentCount }
      symptoms { label }
      components { label }
      related { id title organization { name } related { id } }
      recurrenceOf { id title }
      recurrences { id }
    }
  }
}
`, Variables: `{"first": 20}`},
	{Query: `# An incident with its relations (send Accept-Language: ko, or lang: KO, for Korean).
query IncidentPage($id: ID!) {
  incident(id: $id) {
    id title summary date
    organization { name incidentCount }
    domains { label } symptoms { label } components { label }
    rootCause { label } severity { label }
    related { id title organization { name } related { id } }
    recurrenceOf { id title }
    recurrences { id title }
    similar(first: 5) { score sharedTerms { label } incident { id title } }
  }
}
`, Variables: `{"id": "IL-0216"}`},
	{Query: `# Facets: term and year counts for a filter, from the indexes.
query Facets {
  incidents(first: 5, filter: { dateFrom: "2020-01-01" }) {
    totalCount
    facets(kinds: [SYMPTOM, ROOT_CAUSE, COMPONENT]) { kind counts { term { slug label } count } }
    years { year count }
  }
}
`},
	{Query: `# A write needs a token. Make one on the machine that serves, with the
# server's --db (make run's here), while it serves:
#   bin/incidentlib token add --db ./data/incidentlib.db --name NAME --role editor
# (docs/editing.md). Paste it in the Headers pane below. The author stored
# is the token's name, whatever review.writtenBy says; every change is a
# version in the incident's history, and a new version is a DRAFT.
mutation UpsertIncident($input: IncidentInput!) {
  upsertIncident(input: $input) {
    incident {
      id title updatedAt version reviewState review { writtenBy }
      history(first: 3) { totalCount nodes { version action author { name } changedFields } }
    }
    userErrors { field message code }
  }
}
`, Variables: `{"input": {"id": "IL-0900", "org": "Example", "orgSlug": "example", "title": {"en": "Cache stampede after deploy"}}}`,
		Headers: `{"Authorization": "Bearer ` + TokenPlaceholder + `"}`},
}

var searchExample = ExampleTab{Query: `# Search, English or Korean, with highlights.
query Search($q: String!) {
  search(query: $q, first: 5) {
    totalCount
    edges { score node { id title } highlights { field snippet } }
  }
}
`, Variables: `{"q": "freelist"}`}

var graphiqlPage = template.Must(template.New("graphiql").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>incidentlib — GraphiQL</title>
<style>body{margin:0}#graphiql{height:100vh}.loading{height:100%;display:flex;align-items:center;justify-content:center;font-size:2rem}</style>
<link rel="stylesheet" href="/assets/graphiql/graphiql.min.css" integrity="{{index .SRI "graphiql.min.css"}}">
<script src="/assets/graphiql/react.production.min.js" integrity="{{index .SRI "react.production.min.js"}}"></script>
<script src="/assets/graphiql/react-dom.production.min.js" integrity="{{index .SRI "react-dom.production.min.js"}}"></script>
<script src="/assets/graphiql/graphiql.min.js" integrity="{{index .SRI "graphiql.min.js"}}"></script>
<script src="/assets/graphiql/graphql-ws.min.js" integrity="{{index .SRI "graphql-ws.min.js"}}"></script>
</head>
<body>
<div id="graphiql"><div class="loading">Loading…</div></div>
<script>
const tabs = JSON.parse({{.Tabs}});
// Subscriptions over WebSocket with the bundled graphql-ws (graphiql_live.go).
const wsClient = graphqlWs.createClient({ url: (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + {{.Endpoint}}, lazy: true });
const fetchGraphQL = GraphiQL.createFetcher({ url: location.protocol + '//' + location.host + {{.Endpoint}}, wsClient: wsClient });
// For a moment after a tab switch GraphiQL still sends the previous tab's
// operation name, which the new tab's document does not define (an error:
// "operation ListPage not found"). A name the document does not define is
// dropped: the server then runs the document's one operation, or says it
// needs a name.
const fetcher = (params, opts) => {
  const name = params && params.operationName;
  if (name && typeof params.query === 'string' &&
      !new RegExp('\\b(query|mutation|subscription)\\s+' + name + '\\b').test(params.query)) {
    params = Object.assign({}, params, { operationName: undefined });
  }
  return fetchGraphQL(params, opts);
};
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultTabs: tabs,
    // The editors of the first tab start from these, not from the tab.
    query: tabs[0].query,
    variables: tabs[0].variables,
    isHeadersEditorEnabled: true,
    defaultEditorToolsVisibility: 'variables',
  }),
);
</script>
</body>
</html>
`))

// mountGraphiQL serves GraphiQL at / and its assets under /assets/.
// ExampleTabs are the tabs GraphiQL opens with: a list page, an incident
// with its relations, facets, a write (with the Authorization header), and
// search when the schema has Query.search.
func ExampleTabs() []ExampleTab {
	tabs := append([]ExampleTab(nil), exampleQueries...)
	tabs = append(tabs, koreanIncidentExample, taxonomyExample) // graphiql_ko.go, graphiql_taxonomy.go
	tabs = append(tabs, glossaryExample)                        // graphiql_glossary.go
	if schema := graph.NewExecutableSchema(graph.Config{}).Schema(); schema.Query != nil && schema.Query.Fields.ForName("search") != nil {
		tabs = append(tabs, searchExample)
	}
	tabs = append(tabs, dashboardExample) // graphiql_dashboard.go
	tabs = append(tabs, citeExample)      // graphiql_cite.go
	tabs = append(tabs, liveExample)      // graphiql_live.go
	return tabs
}

func mountGraphiQL(mux *http.ServeMux, endpoint string) {
	tabsJSON, _ := json.Marshal(ExampleTabs())
	page := struct {
		Endpoint string
		Tabs     string
		SRI      map[string]string
	}{endpoint, string(tabsJSON), graphiqlAssets}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_ = graphiqlPage.Execute(w, page)
	})
	sub, _ := fs.Sub(assetFS, "assets")
	files := http.FileServerFS(sub)
	mux.Handle("GET /assets/graphiql/", http.StripPrefix("/assets", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The files never change within a binary; the SRI hashes in the
		// page pin them.
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})))
}
