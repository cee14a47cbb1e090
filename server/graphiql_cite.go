package server

// citeExample cites an incident in both styles (citation.graphqls): the
// BibTeX entry and the CSL-JSON item, with the incident's address as this
// server gives it (--public-url, or the request's host) and today's date
// as the access date.
var citeExample = ExampleTab{Query: `# Cite an incident: a BibTeX entry and a CSL-JSON item (Zotero, pandoc
# --citeproc), with its address here and today's date as accessed.
query Cite($id: ID!) {
  incident(id: $id) {
    id title version
    bibtex: citation(style: BIBTEX)
    csl: citation(style: CSL_JSON)
  }
}
`, Variables: `{"id": "IL-0216"}`}
