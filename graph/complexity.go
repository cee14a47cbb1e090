package graph

import (
	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// The cost of a query is gqlgen's complexity, walked by Cost (cost.go):
// every field costs 1 plus what it selects, except the fields of
// Complexity, which return lists and cost 1 plus the number of items they
// return times what each item selects: a connection its page size (its
// items; the rest of its page once), the lists below their sizes. The
// sizes of lists that no argument bounds are fixed, realistic figures, so
// that the cost of a query is known before it runs and does not depend on
// the data.
//
// A unit is about a microsecond of CPU: what the work that a field does
// beside its items measured on a store of 10,000 generated incidents
// (server's BenchmarkFieldCost; docs/limits.md, "How the costs were
// measured"). A field of an item measured 0.1 to 0.7 µs and costs 1, the
// floor that keeps a query's cost at least its number of fields; the
// fields that rank or count over the store cost their measured time.
const (
	// SimilarBase is what one similar() ranking costs on top of its items:
	// measured 7.1 ms of CPU and 2.3 store read transactions per ranking,
	// whatever its first (3 and 20 measured the same).
	SimilarBase = 7_000
	// FacetKindBase is what counting one kind of facet costs on top of its
	// counts: measured 1.1 ms of CPU per kind over the whole store (a
	// filter narrows it; the cost assumes none).
	FacetKindBase = 1_000
	// YearsBase is what counting the years costs on top of its counts:
	// measured 0.64 ms of CPU over the whole store.
	YearsBase = 600

	// RelatedSize is the assumed length of Incident.related: the corpus
	// gives an incident 0 to 3 related incidents.
	RelatedSize = 3
	// RecurrencesSize is the assumed length of Incident.recurrences:
	// recurrence chains run to about three incidents.
	RecurrencesSize = 3
	// RelatedBySize is the assumed length of Incident.relatedBy: as many
	// incidents name one as it names.
	RelatedBySize = RelatedSize
	// TermListSize is the assumed length of an incident's domains,
	// symptoms, components and contributing factors (1 to 4 each).
	TermListSize = 3
	// TaxonomySize is the assumed number of terms of one kind (the largest
	// kind, components, has 40).
	TaxonomySize = 40
	// FacetCountsSize is the assumed number of terms with a count in one
	// facet.
	FacetCountsSize = 20
	// YearsSize is the assumed number of years with incidents.
	YearsSize = 30
	// ItemsSize is the assumed number of an incident's sources,
	// remediation items and action items.
	ItemsSize = 3
	// OrganizationsSize is the assumed length of Incident.organizations:
	// the affected organization and at most a vendor or a reporter.
	OrganizationsSize = 2
	// EventsSize is the assumed length of Incident.events: a timeline
	// table of a postmortem has about ten rows.
	EventsSize = 10
	// CitationCost is what one Incident.citation costs: formatting it from
	// the record in hand, nothing read. citation's BenchmarkCitation
	// measured 4.4-5.8 µs (BIBTEX) and 12.6-15.6 µs (CSL_JSON) per call on
	// a shared 2-core machine at load average 19, where the figures above
	// measure several times what they do on a quiet one.
	CitationCost = 10
)

// Complexity returns the per-field costs, for graph.Config.Complexity.
func Complexity() ComplexityRoot {
	var c ComplexityRoot

	connection := func(child int, first, last *int) int {
		return costList(pageSize(first, last), child)
	}
	// The three connections of incidents take the same arguments.
	incidents := func(child int, f *incidentlib.IncidentFilter, _ *model.IncidentOrder, first *int, _ *string, last *int, _ *string) int {
		return costAdd(connection(child, first, last), filterCost(f))
	}
	c.Query.Incidents, c.Organization.Incidents, c.TaxonomyTerm.Incidents = incidents, incidents, incidents
	c.Query.Organizations = func(child int, first *int, _ *string, last *int, _ *string, _ *string, _ *model.OrganizationOrder) int {
		return connection(child, first, last)
	}
	c.Query.Search = func(child int, _ string, f *incidentlib.IncidentFilter, _ *model.Lang, first *int, _ *string) int {
		return costAdd(connection(child, first, nil), filterCost(f))
	}
	// A subscription costs what gqlgen's default does, and its filter.
	c.Subscription.IncidentChanged = func(child int, f *incidentlib.IncidentFilter, _ *string) int {
		return costAdd(costAdd(1, child), filterCost(f))
	}
	c.Query.Nodes = func(child int, ids []string) int { return costList(len(ids), child) }
	c.Query.Taxonomy = func(child int, _ model.TaxonomyKind) int { return costList(TaxonomySize, child) }

	c.Incident.Related = func(child int) int { return costList(RelatedSize, child) }
	c.Incident.Recurrences = func(child int) int { return costList(RecurrencesSize, child) }
	c.Incident.RelatedBy = func(child int) int { return costList(RelatedBySize, child) }
	c.Incident.Organizations = func(child int) int { return costList(OrganizationsSize, child) }
	c.Incident.Similar = func(child int, first *int) int {
		n := 5
		if first != nil {
			n = min(max(1, *first), incidentlib.MaxPageSize)
		}
		return costAdd(SimilarBase, costMul(n, child))
	}
	terms := func(child int) int { return costList(TermListSize, child) }
	c.Incident.Domains = terms
	c.Incident.Symptoms = terms
	c.Incident.Components = terms
	c.Incident.Contributing = terms
	c.SimilarIncident.SharedTerms = terms
	items := func(child int) int { return costList(ItemsSize, child) }
	c.Incident.Remediation = items
	c.Incident.ActionItems = items
	c.Incident.Sources = items
	c.Incident.Events = func(child int) int { return costList(EventsSize, child) }
	c.Incident.Citation = func(int, model.CitationStyle, *model.Lang) int { return CitationCost }

	c.IncidentConnection.Facets = func(child int, kinds []model.TaxonomyKind) int {
		n := len(kinds)
		if n == 0 {
			n = len(incidentlib.TermKinds)
		}
		return costAdd(costMul(n, FacetKindBase), costList(n, child))
	}
	c.Facet.Counts = func(child int) int { return costList(FacetCountsSize, child) }
	c.IncidentConnection.Years = func(child int) int { return costAdd(YearsBase, costList(YearsSize, child)) }
	c.IncidentSearchConnection.Facets = c.IncidentConnection.Facets
	c.IncidentSearchConnection.Years = c.IncidentConnection.Years
	statsComplexity(&c)
	c.IncidentSearchEdge.Highlights = func(child int) int { return costList(ItemsSize, child) }
	taxAdminComplexity(&c)
	glossaryComplexity(&c) // glossary.go
	// At most 5 strings, computed only when nothing matches.
	c.IncidentSearchConnection.Suggestions = func(child int) int { return costList(5, child) }
	// A history page is one range scan of the incident's versions, and
	// its edges and nodes each list the page.
	c.Incident.History = func(child int, first *int, _ *string) int { return connection(child, first, nil) }
	c.IncidentVersion.ChangedFields = func(child int) int { return costList(ItemsSize, child) }
	return c
}

// pageSize is the number of items a connection returns at most: first or
// last, the default page size without either. A size over the maximum
// costs the maximum: the field refuses it (INVALID) before it reads
// anything.
func pageSize(first, last *int) int {
	n := 0
	if first != nil {
		n = *first
	}
	if last != nil && *last > n {
		n = *last
	}
	if first == nil && last == nil {
		n = incidentlib.DefaultPageSize
	}
	return min(max(1, n), incidentlib.MaxPageSize)
}

const costMax = int(^uint(0) >> 1)

// costList is the cost of a field returning n items: 1 for the field, and n
// times what each item selects. It is never less than gqlgen's default
// (1 + child), so the cost of a query is at least its number of fields.
func costList(n, child int) int {
	return costAdd(1, costMul(max(1, n), child))
}

// costMul is n*child, saturating at the largest int, with at least 1.
func costMul(n, child int) int {
	if n <= 0 || child <= 0 {
		return 1
	}
	if child > costMax/n {
		return costMax
	}
	return n * child
}

// costAdd is a+b, saturating.
func costAdd(a, b int) int {
	if a > costMax-b {
		return costMax
	}
	return a + b
}
