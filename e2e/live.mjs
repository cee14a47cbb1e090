// Subscribes to incidentChanged with the JavaScript clients frontends use
// (graphql-ws over WebSocket, graphql-sse over SSE) and prints each result
// as a JSON line: {"data": …} per event, {"error": …} when the
// subscription is refused or ends with an error, {"done": true} after the
// count. Called by live_test.go; `npm ci` in e2e/ installs the pinned
// versions.
//
//   node live.mjs URL ws|sse COUNT [SINCE] [TOKEN]
import { createClient as createWS } from 'graphql-ws';
import { createClient as createSSE } from 'graphql-sse';
import WebSocket from 'ws';

const [url, transport, countArg, since, token] = process.argv.slice(2);
if (!url || !['ws', 'sse'].includes(transport)) {
  console.error('usage: node live.mjs URL ws|sse COUNT [SINCE] [TOKEN]');
  process.exit(2);
}
const count = Number(countArg || 1);
const auth = token ? { Authorization: 'Bearer ' + token } : undefined;
const client = transport === 'ws'
  ? createWS({ url: url.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: auth })
  : createSSE({ url: url + '/graphql', retryAttempts: 0, headers: auth });
const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
const query = `subscription($since: String) {
  incidentChanged(since: $since) { seq action incidentId incident { id title } }
}`;
let got = 0;
try {
  for await (const result of client.iterate({ query, variables: since ? { since } : {} })) {
    out(result);
    if (++got >= count) break;
  }
  out({ done: true });
} catch (e) {
  // graphql-ws throws the GraphQL errors of an error message; graphql-sse a
  // NetworkError with the refusal's response.
  let detail = Array.isArray(e) ? e : String(e && e.message || e);
  let status;
  if (e && e.response) {
    status = e.response.status;
    try { detail = await e.response.json(); } catch { /* read already */ }
  }
  out({ error: detail, status });
}
client.dispose();
process.exit(0);
