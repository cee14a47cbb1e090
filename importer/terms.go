package importer

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// termMapper maps source categories and keywords onto taxonomy terms.
type termMapper struct{ tax *incidentlib.Taxonomy }

// mappedKinds are the kinds a source value is tried against, in order.
var mappedKinds = []incidentlib.TermKind{
	incidentlib.KindDomain, incidentlib.KindSymptom, incidentlib.KindComponent,
	incidentlib.KindRootCause, incidentlib.KindContributing,
}

// candidates are the spellings of a source value tried in the taxonomy:
// as given, and with spaces and underscores as hyphens ("software bug" is
// tried as "software-bug").
func candidates(v string) []string {
	v = strings.ToLower(oneLine(v))
	out := []string{v}
	h := strings.NewReplacer(" ", "-", "_", "-").Replace(v)
	if h != v {
		out = append(out, h)
	}
	return out
}

// tagSet collects what a record's source values mapped to.
type tagSet struct {
	inc       *incidentlib.Incident
	unmapped  map[string][]string // source field -> values
	fields    []string            // source fields in first-seen order
	warnings  []string
	rootCause []string // root causes beyond the first
}

func (m termMapper) newSet(inc *incidentlib.Incident) *tagSet {
	return &tagSet{inc: inc, unmapped: map[string][]string{}}
}

// add maps the values of one source field (such as "categories") onto
// terms of every kind that resolves them. Values no kind resolves are
// kept as unmapped.
func (m termMapper) add(s *tagSet, field string, values []string) {
	seen := map[string]bool{}
	for _, v := range values {
		v = oneLine(v)
		if v == "" || seen[strings.ToLower(v)] {
			continue
		}
		seen[strings.ToLower(v)] = true
		hit := false
		if m.tax != nil {
			for _, kind := range mappedKinds {
				var term *incidentlib.Term
				for _, c := range candidates(v) {
					if term = m.tax.Resolve(kind, c); term != nil {
						break
					}
				}
				if term == nil {
					continue
				}
				hit = true
				s.addTerm(kind, term.Slug)
			}
		}
		if !hit {
			if _, ok := s.unmapped[field]; !ok {
				s.fields = append(s.fields, field)
			}
			s.unmapped[field] = append(s.unmapped[field], v)
		}
	}
}

func (s *tagSet) addTerm(kind incidentlib.TermKind, slug string) {
	var list *[]string
	switch kind {
	case incidentlib.KindDomain:
		list = &s.inc.Domain
	case incidentlib.KindSymptom:
		list = &s.inc.Symptoms
	case incidentlib.KindComponent:
		list = &s.inc.Components
	case incidentlib.KindContributing:
		list = &s.inc.Contributing
	case incidentlib.KindRootCause:
		if s.inc.RootCause == "" {
			s.inc.RootCause = slug
		} else if s.inc.RootCause != slug && !slices.Contains(s.rootCause, slug) {
			s.rootCause = append(s.rootCause, slug)
			s.warnings = append(s.warnings, fmt.Sprintf("root cause %q also matched; kept %q", slug, s.inc.RootCause))
		}
		return
	default:
		return
	}
	if slices.Contains(*list, slug) {
		return
	}
	if len(*list) >= incidentlib.MaxListLen {
		s.warnings = append(s.warnings, fmt.Sprintf("%s term %q left out: list is full", kind, slug))
		return
	}
	*list = append(*list, slug)
}

// finish stores the unmapped values on the record (Extra "source_tags")
// and returns them as "field=value" for Record.Unmapped, and the warnings.
func (s *tagSet) finish() (unmapped []string, warnings []string) {
	if len(s.unmapped) > 0 {
		tags := map[string][]string{}
		for _, f := range s.fields {
			tags[f] = s.unmapped[f]
			for _, v := range s.unmapped[f] {
				unmapped = append(unmapped, f+"="+v)
			}
		}
		setExtra(s.inc, "source_tags", tags)
	}
	if len(s.rootCause) > 0 {
		setExtra(s.inc, "other_root_causes", s.rootCause)
	}
	return unmapped, s.warnings
}

// severityUnknown sets severity "unknown" when the taxonomy has that term.
func (m termMapper) severityUnknown(inc *incidentlib.Incident) {
	if m.tax != nil && m.tax.Term(incidentlib.KindSeverity, "unknown") != nil {
		inc.Severity = "unknown"
	}
}

// UnmappedCounts counts the unmapped values of records, by "field=value",
// for reviewing which aliases the taxonomy lacks.
func UnmappedCounts(recs []Record) []UnmappedCount {
	n := map[string]int{}
	for _, r := range recs {
		for _, u := range r.Unmapped {
			n[u]++
		}
	}
	out := make([]UnmappedCount, 0, len(n))
	for k, c := range n {
		out = append(out, UnmappedCount{Value: k, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

// UnmappedCount is how many records carry one unmapped source value.
type UnmappedCount struct {
	Value string // "field=value"
	Count int
}
