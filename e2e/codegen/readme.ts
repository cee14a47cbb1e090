// The README's queries typed by graphql-codegen's client preset, generated
// from the served /schema.graphql (clients_test.go runs graphql-codegen,
// then tsc --noEmit on this file and the generated ./gql).
import { graphql } from './gql';
import type { ListPageQuery, IncidentPageQuery, TaxonomyQuery } from './gql/graphql';

export const ListPage = graphql(`
  query ListPage {
    incidents(first: 20, filter: { symptoms: ["high-latency"], dateFrom: "2020-01-01" },
              orderBy: { field: DATE, direction: DESC }) {
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
`);

export const IncidentPage = graphql(`
  query IncidentPage($id: ID!) {
    incident(id: $id) {
      title(lang: KO) summary(lang: KO) lessons(lang: KO)
      timeline { detectedAfter resolvedAfter resolvedAfterSeconds }
      remediation { text(lang: KO) }
      sources { url archived }
      similar(first: 5) { score sameOrganization sharedTerms { label } incident { id title } }
    }
  }
`);

export const Taxonomy = graphql(`
  query Taxonomy {
    taxonomy(kind: ROOT_CAUSE) { slug label(lang: KO) description incidentCount }
    term(kind: SYMPTOM, slug: "high-latency") { incidents(first: 5) { nodes { id title } } }
    organizations(first: 10) { totalCount nodes { slug name incidentCount } }
    nodes(ids: ["IL-0213", "org:roblox", "term:symptom:high-latency"]) { id }
  }
`);

export const Changes = graphql(`
  subscription Changes { incidentChanged { seq action incidentId incident { id title } } }
`);

// The types say what the README says of the answers.
export function titles(d: ListPageQuery): string[] {
  return d.incidents.nodes.map((n) => (n.title ?? '') + ' ' + n.organization.name);
}
export function similarIds(d: IncidentPageQuery): string[] {
  return d.incident?.similar.map((s) => s.incident.id) ?? [];
}
export function nodeIds(d: TaxonomyQuery): (string | null)[] {
  return d.nodes.map((n) => n?.id ?? null);
}
