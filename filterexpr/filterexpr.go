// Package filterexpr holds the rules of an incidentlib.IncidentFilter as
// a whole, nested filters (Not, Or) included: its bounds, its one
// validation at every depth (Validate, which the store runs on every
// filter it is given, whatever path brought it), the count of its nodes
// the cost reads (Nodes), which of its nodes ask for unlisted incidents
// (Asks), and its JSON form, the one of GraphQL's variables (Decode), for
// the exports. The semantics are in docs/graph.md ("Set filters"); the
// store evaluates them (storage/setfilter.go).
package filterexpr

import (
	"slices"
	"strconv"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// The bounds of one filter expression.
const (
	// MaxDepth is how many levels of not and or may nest below the top
	// filter: {not: {or: [{not: {not: {...}}}]}} is at the limit.
	MaxDepth = 4
	// MaxNodes is how many filters one expression holds, the top one
	// and every not and or item counted.
	MaxNodes = 32
	// MaxItems is how many list items (ids, slugs, review states,
	// verifications) all the filters of one expression hold together.
	MaxItems = 1000
)

// IsSet reports whether f is a set filter: it has a not or an or (an
// empty or list too).
func IsSet(f *incidentlib.IncidentFilter) bool {
	return f != nil && (f.Not != nil || f.Or != nil)
}

// Nodes is the number of filters in f: 0 for nil, 1 for a filter without
// not and or.
func Nodes(f *incidentlib.IncidentFilter) int {
	if f == nil {
		return 0
	}
	n := 1 + Nodes(f.Not)
	for i := range f.Or {
		n += Nodes(&f.Or[i])
	}
	return n
}

// Asks reports whether the node n's own fields ask for unlisted
// (withdrawn) incidents: its reviewStates names an unlisted state
// (incidentlib.UnlistedStates), or it gives ids. Only a node outside any
// not (or under an even number of them) lets an unlisted incident in,
// and only one that matches it (docs/graph.md, "Set filters").
func Asks(n *incidentlib.IncidentFilter) bool {
	if len(n.IDs) > 0 {
		return true
	}
	return slices.ContainsFunc(n.ReviewStates, func(s incidentlib.ReviewState) bool {
		return slices.Contains(incidentlib.UnlistedStates, s)
	})
}

// Validate checks f at every depth: the bounds (MaxDepth, MaxNodes,
// MaxItems), the dates and times, and the enum values. It returns the
// first problem as EINVALID naming its path from "filter", such as
// filter.or.2.not.dateFrom.
func Validate(f *incidentlib.IncidentFilter) error {
	v := validator{}
	return v.node(f, []string{"filter"}, 0)
}

// counter counts the filters and list items of one expression as a walk
// (Validate's, Decode's) enters them.
type counter struct {
	nodes, items int
}

// enter counts the filter at path, depth levels below the top, refusing
// it past MaxDepth or MaxNodes.
func (c *counter) enter(path []string, depth int) error {
	if depth > MaxDepth {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, path,
			"%s: filters nest at most %d levels of not and or below the top filter", pathString(path), MaxDepth)
	}
	if c.nodes++; c.nodes > MaxNodes {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, path,
			"%s: a filter holds at most %d filters, the top one and every not and or item counted", pathString(path), MaxNodes)
	}
	return nil
}

type validator struct{ c counter }

// at is path extended by more, in a new slice.
func at(path []string, more ...string) []string {
	return append(slices.Clip(path), more...)
}

func (v *validator) node(f *incidentlib.IncidentFilter, path []string, depth int) error {
	if err := v.c.enter(path, depth); err != nil {
		return err
	}
	lists := []struct {
		name string
		n    int
	}{
		{"ids", len(f.IDs)}, {"organizations", len(f.Organizations)}, {"domains", len(f.Domains)},
		{"symptoms", len(f.Symptoms)}, {"components", len(f.Components)}, {"rootCauses", len(f.RootCauses)},
		{"contributing", len(f.Contributing)}, {"severities", len(f.Severities)},
		{"reviewStates", len(f.ReviewStates)}, {"verification", len(f.Verification)},
	}
	for _, l := range lists {
		if v.c.items += l.n; v.c.items > MaxItems {
			p := at(path, l.name)
			return incidentlib.FieldErrorf(incidentlib.EINVALID, p,
				"%s: a filter's lists hold at most %d items together", pathString(p), MaxItems)
		}
	}
	for _, d := range []struct {
		name string
		s    *string
	}{{"dateFrom", f.DateFrom}, {"dateTo", f.DateTo}} {
		if d.s != nil {
			if _, err := incidentlib.ParseDate(*d.s); err != nil {
				p := at(path, d.name)
				return incidentlib.FieldErrorf(incidentlib.EINVALID, p, "%s %s", pathString(p), err)
			}
		}
	}
	if f.UpdatedSince != nil {
		if _, err := incidentlib.ParseTimestamp(*f.UpdatedSince); err != nil {
			p := at(path, "updatedSince")
			return incidentlib.FieldErrorf(incidentlib.EINVALID, p, "%s %s", pathString(p), err)
		}
	}
	for i, s := range f.ReviewStates {
		if !s.IsValid() {
			p := at(path, "reviewStates", strconv.Itoa(i))
			return incidentlib.FieldErrorf(incidentlib.EINVALID, p, "%s: unknown review state %q", pathString(p), s)
		}
	}
	for i, s := range f.Verification {
		if !s.IsValid() {
			p := at(path, "verification", strconv.Itoa(i))
			return incidentlib.FieldErrorf(incidentlib.EINVALID, p,
				"%s: verification %q is not one of PRIMARY_SOURCE, SECONDARY_REPORT, FIRST_PERSON_ACCOUNT, UNKNOWN", pathString(p), s)
		}
	}
	if f.Not != nil {
		if err := v.node(f.Not, at(path, "not"), depth+1); err != nil {
			return err
		}
	}
	for i := range f.Or {
		if err := v.node(&f.Or[i], at(path, "or", strconv.Itoa(i)), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// pathString is path as a message names it: filter.or.2.not.symptoms.
func pathString(path []string) string { return strings.Join(path, ".") }
