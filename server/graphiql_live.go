package server

// GraphiQL's subscription tab: the changes of incidents as they are
// committed, over WebSocket (graphql-transport-ws) with graphql-ws 6.4.2
// bundled into the embedded assets (assets/graphiql/graphql-ws.min.js, an
// IIFE with the global graphqlWs, built by esbuild from e2e/live-client.mjs
// with `npm run build-live-client` in e2e/; its licence is beside it). The
// page hands GraphiQL a graphql-ws client for subscriptions
// (createFetcher's wsClient); queries and mutations still go over HTTP.

// liveClientAsset is the bundled client, with its SRI hash.
const (
	liveClientAsset = "graphql-ws.min.js"
	liveClientSRI   = "sha256-87YZGJtbtRBCca9Y1fbntkuAHyEgzoaRhlc4jlaIgAQ="
)

func init() { graphiqlAssets[liveClientAsset] = liveClientSRI }

var liveExample = ExampleTab{Query: `# Live updates: every change of an incident as it is committed (run it,
# then write in another tab or with curl). Resume after a seq with since;
# with a filter, matchesFilter says whether the incident is (still) in it.
subscription Changes($since: String) {
  incidentChanged(since: $since) {
    seq action incidentId matchesFilter
    incident { id title updatedAt organization { name } }
  }
}
`}
