package testutil

import (
	"fmt"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// FacetDiff compares a facet's counts with want (term slug to count, from
// the records): "" when they agree, else what differs, each term that
// counts wrong and those the facet misses. want is not changed.
func FacetDiff(counts []incidentlib.TermCount, want map[string]int) string {
	var diffs []string
	seen := map[string]bool{}
	for _, c := range counts {
		seen[c.Term.Slug] = true
		if want[c.Term.Slug] != c.Count {
			diffs = append(diffs, fmt.Sprintf("facet %s: %d, want %d", c.Term.Slug, c.Count, want[c.Term.Slug]))
		}
	}
	for slug, n := range want {
		if !seen[slug] && n != 0 {
			diffs = append(diffs, fmt.Sprintf("facet %s missing, want %d", slug, n))
		}
	}
	return strings.Join(diffs, "; ")
}
