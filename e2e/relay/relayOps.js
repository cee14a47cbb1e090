// Operations in the shape of the README's examples, compiled by
// relay-compiler against the served /schema.graphql (relay_test.go) and
// run with relay-runtime by relay.mjs. Relay names an operation after its
// module: relayOps + a name + Query or Subscription.
import { graphql } from 'relay-runtime';

export const listPage = graphql`
  query relayOpsListPageQuery {
    incidents(first: 20, filter: { dateFrom: "2015-01-01" }, orderBy: { field: DATE, direction: DESC }) {
      totalCount
      pageInfo { hasNextPage endCursor }
      nodes {
        id date title
        organization { name incidentCount }
        symptoms { label }
        related { id title related { id } }
        recurrenceOf { id title }
        recurrences { id }
      }
      facets(kinds: [SYMPTOM, ROOT_CAUSE]) { kind counts { term { slug label } count } }
      years { year count }
    }
  }
`;

export const incidentPage = graphql`
  query relayOpsIncidentPageQuery($id: ID!) {
    incident(id: $id) {
      id
      title
      summary(lang: KO)
      timeline { detectedAfter resolvedAfter resolvedAfterSeconds }
      sources { url archived }
      similar(first: 5) { score sameOrganization sharedTerms { label } incident { id title } }
    }
  }
`;

export const taxonomy = graphql`
  query relayOpsTaxonomyQuery {
    taxonomy(kind: ROOT_CAUSE) { slug label(lang: KO) incidentCount }
    organizations(first: 10) { totalCount nodes { slug name incidentCount } }
    nodes(ids: ["IL-0213", "org:roblox", "term:symptom:high-latency"]) { id }
  }
`;

export const changes = graphql`
  subscription relayOpsChangesSubscription {
    incidentChanged { seq action incidentId matchesFilter incident { id title } }
  }
`;
