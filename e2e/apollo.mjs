// Apollo Client against the real server, set up as docs/clients.md says
// (clients_test.go): possibleTypes generated from the served SDL, so that
// fragments on Node match; a type policy that appends `nodes` pages for
// Query.incidents and relayStylePagination for the `edges` of
// Query.organizations. It prints one JSON object with what each step saw.
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { buildSchema, isAbstractType } from 'graphql';

const url = process.argv[2];
if (!url) {
  console.error('usage: node apollo.mjs URL');
  process.exit(2);
}

// docs/clients.md: possibleTypes, generated from the server's schema.
// From GET /schema.graphql, which --prod serves too (introspection is off
// there); at build time, the same function over the downloaded file.
async function fetchPossibleTypes(base) {
  const schema = buildSchema(await (await fetch(base + '/schema.graphql')).text());
  const possibleTypes = {};
  for (const t of Object.values(schema.getTypeMap())) {
    if (isAbstractType(t)) possibleTypes[t.name] = schema.getPossibleTypes(t).map((p) => p.name);
  }
  return possibleTypes;
}

// docs/clients.md: fetchMore with `after` appends a page of `nodes`; the
// same arguments but `first`/`after` are one list.
function nodesPagination(keyArgs) {
  return {
    keyArgs,
    merge(existing, incoming, { args }) {
      if (!existing || !args?.after) return incoming;
      return { ...incoming, nodes: [...existing.nodes, ...incoming.nodes] };
    },
  };
}

const possibleTypes = await fetchPossibleTypes(url);
const client = new ApolloClient({
  link: new HttpLink({ uri: url + '/graphql' }),
  cache: new InMemoryCache({
    possibleTypes,
    typePolicies: {
      Query: {
        fields: {
          incidents: nodesPagination(['filter', 'orderBy']),
          organizations: relayStylePagination(['filter', 'orderBy', 'nameStartsWith']),
        },
      },
    },
  }),
});
const out = { possibleTypes: { Node: possibleTypes.Node } };

// A fragment on Node and one on Incident, read back from the cache.
const NODES = gql`
  query Nodes($ids: [ID!]!) {
    nodes(ids: $ids) { __typename ...NodeId ... on Incident { title } ... on Organization { name } }
  }
  fragment NodeId on Node { id }
`;
const ids = ['IL-0213', 'org:roblox', 'term:symptom:high-latency'];
out.nodes = (await client.query({ query: NODES, variables: { ids } })).data.nodes;
out.identified = out.nodes.map((n) => client.cache.identify(n) ?? null);

// Two pages of `nodes`.
const LIST = gql`
  query ListPage($first: Int, $after: String) {
    incidents(first: $first, after: $after, orderBy: { field: DATE, direction: DESC }) {
      totalCount
      pageInfo { hasNextPage endCursor }
      nodes { id date title organization { name } }
    }
  }
`;
const list = client.watchQuery({ query: LIST, variables: { first: 5 } });
const first = await new Promise((resolve, reject) => {
  const sub = list.subscribe({
    next: (r) => { if (r.data?.incidents) { sub.unsubscribe(); resolve(r.data.incidents); } },
    error: reject,
  });
});
out.page1 = first.nodes.map((n) => n.id);
out.page2 = (await list.fetchMore({ variables: { after: first.pageInfo.endCursor } })).data.incidents.nodes.map((n) => n.id);
out.afterFetchMore = client.readQuery({ query: LIST, variables: { first: 5 } }).incidents.nodes.map((n) => n.id);

// Two pages of `edges`.
const ORGS = gql`
  query Orgs($first: Int, $after: String) {
    organizations(first: $first, after: $after) {
      edges { cursor node { id slug name } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;
const orgs = client.watchQuery({ query: ORGS, variables: { first: 3 } });
const orgPage = await new Promise((resolve, reject) => {
  const sub = orgs.subscribe({
    next: (r) => { if (r.data?.organizations) { sub.unsubscribe(); resolve(r.data.organizations); } },
    error: reject,
  });
});
out.orgPage1 = orgPage.edges.map((e) => e.node.id);
out.orgPage2 = (await orgs.fetchMore({ variables: { after: orgPage.pageInfo.endCursor } })).data.organizations.edges.map((e) => e.node.id);
out.orgsAfterFetchMore = client.readQuery({ query: ORGS, variables: { first: 3 } }).organizations.edges.map((e) => e.node.id);

client.stop();
process.stdout.write(JSON.stringify(out));
