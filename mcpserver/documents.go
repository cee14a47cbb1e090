package mcpserver

import (
	"fmt"
	"strings"
)

// Documents are every GraphQL document the tools send, each exactly as
// it is sent: the fixed queries of the tools and similar_incidents'
// search of a description, one document per number of words (1 to
// maxWords). The set is closed: no tool sends a document that is not
// here (TestToolsUnderTrustedDocuments calls every tool with a server
// that accepts these alone). Under --trusted-documents, serve lists them
// beside the manifest's while /mcp is on (server.Config.NoMCP), so that
// the tools run, over /mcp and over incidentlib mcp's stdio alike, by
// the edge's one rule for trusted documents (server/gqledge/trusted.go).
func Documents() []string {
	docs := []string{searchQuery, listQuery, getQuery, similarQuery, statsQuery}
	return append(docs, wordsQueries[1:]...)
}

// wordsQueries are textMatches' documents by number of words: n aliased
// searches w0..w(n-1) of the variables $q0..$q(n-1), all in $lang with
// $first each.
var wordsQueries = func() (qs [maxWords + 1]string) {
	for n := 1; n <= maxWords; n++ {
		var q strings.Builder
		q.WriteString("query ($lang: Lang, $first: Int")
		for k := range n {
			fmt.Fprintf(&q, ", $q%d: String!", k)
		}
		q.WriteString(") {")
		for k := range n {
			fmt.Fprintf(&q, " w%d: search(query: $q%d, lang: $lang, first: $first) { edges { score node { ...Brief } } }", k, k)
		}
		q.WriteString(" } " + briefFields)
		qs[n] = q.String()
	}
	return qs
}()
