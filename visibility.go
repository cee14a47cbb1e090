package incidentlib

import "slices"

// Visibility: which incidents the library shows in lists and derived
// results. This table is the one rule; docs/graph.md ("Withdrawn
// incidents") lists where it is enforced.
//
// An incident in an unlisted state (WITHDRAWN) stays readable by id
// (incident, node, nodes, a link the record names such as recurrenceOf,
// a mutation's payload, a change's incident) but leaves every list and
// everything derived from one unless the filter names its state in
// reviewStates: incidents and the connections of organizations and terms,
// counts, facets, years and stats, search, similar, related, recurrences,
// relatedBy, the exports, and a subscription's matchesFilter. A deleted
// incident is in no list at all (its tombstone is not an incident).
//
// The store applies it as a set (storage's listedSet, which its filter
// matching, counts, Similar, RecurrenceIDs and RelatedByIDs read); a
// reader holding records only (links resolved to records, possibly from
// another library) applies Listed, which reads the same table.

// UnlistedStates are the review states whose incidents lists leave out
// unless a filter names the state in ReviewStates.
var UnlistedStates = []ReviewState{ReviewWithdrawn}

// Listed reports whether lists and derived results show inc when they are
// not asked for its state: it is not nil and its state is not one of
// UnlistedStates.
func (i *Incident) Listed() bool {
	return i != nil && !slices.Contains(UnlistedStates, i.State())
}
