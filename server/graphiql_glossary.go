package server

// glossaryExample is the GraphiQL tab of the glossary search translates
// queries with: its entries holding a word, and, in a comment, the
// admin's mutations that change it (docs/search.md, "Administering the
// glossary").
var glossaryExample = ExampleTab{Query: `# The glossary search translates queries with: an admin changes it
# without a restart with addGlossaryEntry, updateGlossaryEntry and
# removeGlossaryEntry (an admin token in the Headers pane), e.g.
#   mutation { addGlossaryEntry(input: {en: ["zombie process"], ko: ["좀비 프로세스"]}) {
#     entry { key en ko } userErrors { field message code } } }
query Glossary($contains: String = "lag") {
  glossary(contains: $contains, first: 20) {
    totalCount
    version
    nodes { key en ko note }
    pageInfo { hasNextPage endCursor }
  }
}
`}
