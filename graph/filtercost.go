package graph

import (
	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/filterexpr"
)

// FilterNodeCost is what each filter of a set filter beyond the first
// (each not and or item, filterexpr.Nodes) costs: the store reads every
// one's postings and combines the sets. Measured 0.2 ms per filter
// counting a set filter on a store of 10,000 generated incidents
// (storage's BenchmarkSetFilterNodes; docs/limits.md, "Cost"); a plain
// filter costs nothing beyond its field, as before.
const FilterNodeCost = 200

// filterCost is what filter f adds to the cost of the field it is given to.
func filterCost(f *incidentlib.IncidentFilter) int {
	if n := filterexpr.Nodes(f); n > 1 {
		return costMul(min(n, filterexpr.MaxNodes+1)-1, FilterNodeCost)
	}
	return 0
}
