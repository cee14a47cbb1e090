// urql against the real server, set up as docs/clients.md says
// (clients_test.go): fetchExchange for queries, subscriptionExchange over
// graphql-sse for incidentChanged. It prints one JSON object: the query's
// data and the first subscription event about the incident named.
import { Client, cacheExchange, fetchExchange, subscriptionExchange, gql } from '@urql/core';
import { createClient as createSSE } from 'graphql-sse';

const [url, watchID] = process.argv.slice(2);
if (!url || !watchID) {
  console.error('usage: node urql.mjs URL INCIDENT_ID');
  process.exit(2);
}
// urql's document cache refetches the incident's query when the
// subscription brings an Incident; the refetch is torn down when the event
// has been seen, and Node's fetch then rejects with an AbortError that
// urql does not catch (a browser only logs it). Anything else still fails.
process.on('unhandledRejection', (e) => {
  if (e?.name !== 'AbortError') throw e;
});
const sse = createSSE({ url: url + '/graphql', retryAttempts: 0 });
const client = new Client({
  url: url + '/graphql',
  exchanges: [
    cacheExchange,
    fetchExchange,
    subscriptionExchange({
      forwardSubscription: (request) => ({
        subscribe: (sink) => ({ unsubscribe: sse.subscribe(request, sink) }),
      }),
    }),
  ],
});

const out = {};
const q = await client.query(gql`
  query IncidentPage($id: ID!) {
    incident(id: $id) { id title timeline { detectedAfter resolvedAfter } organization { name } }
  }
`, { id: watchID }).toPromise();
out.query = { data: q.data, error: q.error ? String(q.error) : null };

out.event = await new Promise((resolve, reject) => {
  const { unsubscribe } = client.subscription(gql`
    subscription Changes { incidentChanged { seq action incidentId incident { id title } } }
  `, {}).subscribe((r) => {
    if (r.error) { unsubscribe(); reject(r.error); return; }
    if (r.data?.incidentChanged?.incidentId === watchID) { unsubscribe(); resolve(r.data.incidentChanged); }
  });
});
sse.dispose();
process.stdout.write(JSON.stringify(out));
