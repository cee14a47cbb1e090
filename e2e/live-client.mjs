// The entry of the browser bundle of graphql-ws that GraphiQL's
// subscription tab uses (server/assets/graphiql/graphql-ws.min.js, global
// graphqlWs). Rebuild with `npm run build-live-client` in e2e/ after
// `npm ci`; the bundle is committed, so the binary needs no npm.
export { createClient } from 'graphql-ws';
