package main

import (
	"encoding/json"
	"time"
)

// The graphql benchmark's filtered list pages: the list page with a filter
// a frontend's date picker and facet send, as variables (the query text
// stays the same, so the parsed-query cache keeps one entry).

// FilteredListPageQuery is ListPageQuery with a filter.
const FilteredListPageQuery = `query FilteredListPage($first: Int, $filter: IncidentFilter) { incidents(first: $first, filter: $filter) { nodes { id title organization { name incidentCount } symptoms { label } components { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id } } } }`

// The names of the graphql benchmark's list pages, for -profiled.
const (
	profiledList        = "list"
	profiledDate        = "date"
	profiledDateSymptom = "date+symptom"
)

// dateRangeVariants is how many different date ranges the filtered pages
// send in turn.
const dateRangeVariants = 1000

// dateRangeBodies returns the bodies of the filtered list page with
// dateRangeVariants date ranges, each holding every dated incident of the
// generator (2006 to 2025): dateFrom in 1990-1992, dateTo in 2026-2028. So
// every body has the same answer, and each is a different request. With
// symptom, the filter names that symptom too.
func dateRangeBodies(first int, symptom string) [][]byte {
	from := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([][]byte, dateRangeVariants)
	for i := range out {
		f := map[string]any{
			"dateFrom": from.AddDate(0, 0, i).Format(time.DateOnly),
			"dateTo":   to.AddDate(0, 0, (i*7)%dateRangeVariants).Format(time.DateOnly),
		}
		if symptom != "" {
			f["symptoms"] = []string{symptom}
		}
		out[i], _ = json.Marshal(map[string]any{"query": FilteredListPageQuery, "variables": map[string]any{"first": first, "filter": f}})
	}
	return out
}

// commonSymptom is the symptom most incidents have (the first by slug
// among equals), from the count of each.
func commonSymptom(counts map[string]int) string {
	best := ""
	for s, n := range counts {
		if n > counts[best] || (n == counts[best] && s < best) {
			best = s
		}
	}
	return best
}
