// Subscribes to incidentChanged with graphql-sse as a frontend would, with
// the client's default retries (five, with its backoff), counting the
// requests it makes, and prints one JSON line: the results the
// subscription yielded, the error it ended with, if any, and the number
// of requests. Called by live_refusal_test.go: a refusal (a bad since,
// SEQUENCE_AHEAD, a bad token) must reach the subscriber at once, with
// its code, after one request.
//
//   node live-refusal.mjs URL SINCE [TOKEN]
import { createClient } from 'graphql-sse';

const [url, since, token] = process.argv.slice(2);
if (!url) {
  console.error('usage: node live-refusal.mjs URL SINCE [TOKEN]');
  process.exit(2);
}
let requests = 0;
const client = createClient({
  url: url + '/graphql',
  headers: token ? { Authorization: 'Bearer ' + token } : undefined,
  fetchFn: (...args) => { requests++; return fetch(...args); },
});
const query = `subscription($since: String) {
  incidentChanged(since: $since) { seq action incidentId }
}`;
const results = [];
let error;
try {
  for await (const result of client.iterate({ query, variables: since ? { since } : {} })) {
    results.push(result);
    if (result.data) break; // not a refusal: enough
  }
} catch (e) {
  error = String(e && e.message || e);
}
process.stdout.write(JSON.stringify({ results, error, requests }) + '\n');
client.dispose();
process.exit(0);
