package server

// taxonomyExample is the GraphiQL tab of the taxonomy: its terms with
// their deprecation and aliases, and, in a comment, the admin's mutations
// that change it (docs/editing.md, "Taxonomy and organizations").
var taxonomyExample = ExampleTab{Query: `# The store's taxonomy: an admin changes it without a restart with
# addTerm, updateTerm, addTermAliases and deprecateTerm, and the
# organizations with addOrganization, renameOrganization and
# mergeOrganizations (an admin token in the Headers pane), e.g.
#   mutation { deprecateTerm(kind: SYMPTOM, slug: "packet-loss") {
#     term { deprecated } userErrors { field message code } } }
query Taxonomy($kind: TaxonomyKind! = SYMPTOM) {
  taxonomy(kind: $kind) {
    slug
    label
    ko: label(lang: KO)
    deprecated
    aliases
    incidentCount
  }
}
`}
