// Runs the operations relay-compiler compiled from relay/relayOps.js
// (relay_test.go) with relay-runtime against the real server: one
// Environment, one Store, the default getDataID (a record's id), the
// queries over HTTP and the subscription over graphql-sse. It prints one
// JSON object: what each query found, the subscription event, the
// incident's record in the store after the event, and every warning
// relay-runtime printed (such as "Expected __typename to be consistent").
import { createRequire } from 'node:module';
import path from 'node:path';
import relay from 'relay-runtime';
import { createClient } from 'graphql-sse';

const { Environment, Network, RecordSource, Store, Observable, fetchQuery, requestSubscription } = relay;
const [url, artifacts, watchID] = process.argv.slice(2);
if (!url || !artifacts || !watchID) {
  console.error('usage: node relay.mjs URL ARTIFACT_DIR INCIDENT_ID');
  process.exit(2);
}
const warnings = [];
for (const k of ['error', 'warn']) {
  const orig = console[k];
  console[k] = (...a) => { warnings.push(a.map(String).join(' ')); orig(...a); };
}
const require = createRequire(import.meta.url);
const artifact = (name) => require(path.join(artifacts, `${name}.graphql.js`));

const sse = createClient({ url: url + '/graphql', retryAttempts: 0 });
const network = Network.create(
  async (params, variables) => {
    const res = await fetch(url + '/graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query: params.text, variables }),
    });
    return res.json();
  },
  (params, variables) => Observable.create((sink) => sse.subscribe({ query: params.text, variables }, sink)),
);
const environment = new Environment({ network, store: new Store(new RecordSource()) });

const out = { queries: {} };
out.queries.listPage = await fetchQuery(environment, artifact('relayOpsListPageQuery'), {}).toPromise();
out.queries.incidentPage = await fetchQuery(environment, artifact('relayOpsIncidentPageQuery'), { id: watchID }).toPromise();
out.queries.taxonomy = await fetchQuery(environment, artifact('relayOpsTaxonomyQuery'), {}).toPromise();

// The subscription's event goes into the same store as the incident.
out.event = await new Promise((resolve, reject) => {
  const sub = requestSubscription(environment, {
    subscription: artifact('relayOpsChangesSubscription'),
    variables: {},
    onNext: (data) => {
      if (data?.incidentChanged?.incidentId === watchID) {
        sub.dispose();
        resolve(data.incidentChanged);
      }
    },
    onError: reject,
  });
});
const rec = environment.getStore().getSource().get(watchID);
out.record = rec ? { __typename: rec.__typename, id: rec.id, title: rec.title } : null;
out.warnings = warnings;
sse.dispose();
process.stdout.write(JSON.stringify(out));
