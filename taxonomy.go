package incidentlib

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
)

// TermKind is a kind of taxonomy term.
type TermKind string

// The kinds of taxonomy terms, by the name IL-JSON uses.
const (
	KindDomain       TermKind = "domain"
	KindSymptom      TermKind = "symptom"
	KindComponent    TermKind = "component"
	KindRootCause    TermKind = "root_cause"
	KindContributing TermKind = "contributing"
	KindSeverity     TermKind = "severity"
)

// TermKinds lists every kind in a fixed order.
var TermKinds = []TermKind{KindDomain, KindSymptom, KindComponent, KindRootCause, KindContributing, KindSeverity}

// IsValid reports whether k is a known kind.
func (k TermKind) IsValid() bool { return slices.Contains(TermKinds, k) }

// Term is one taxonomy term.
type Term struct {
	Kind        TermKind `json:"kind"`
	Slug        string   `json:"slug"`
	Label       Text     `json:"label"`
	Description Text     `json:"description"`
	// Aliases are lowercase values of other collections that map onto this term.
	Aliases []string `json:"aliases,omitempty"`
	// Deprecated terms stay on the incidents that carry them; an upsert
	// that adds one to an incident is refused (taxadmin.go).
	Deprecated bool `json:"deprecated,omitempty"`
}

// ID is the term's global id, "term:KIND:SLUG".
func (t *Term) ID() string { return "term:" + string(t.Kind) + ":" + t.Slug }

// TermKey names a term.
type TermKey struct {
	Kind TermKind
	Slug string
}

var slugRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidSlug reports whether s is a well-formed slug: lowercase ASCII letters
// and digits in hyphen-separated words.
func ValidSlug(s string) bool { return len(s) <= 100 && slugRE.MatchString(s) }

// Taxonomy is the set of terms of every kind.
type Taxonomy struct {
	Terms  []*Term
	byKey  map[TermKey]*Term
	byKind map[TermKind][]*Term
	alias  map[TermKey]*Term // alias (lowercase) -> term
}

// ParseTaxonomy reads the taxonomy file format {"terms":[...]} and checks it.
func ParseTaxonomy(data []byte) (*Taxonomy, error) {
	var f struct {
		Terms []*Term `json:"terms"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("taxonomy: %w", err)
	}
	return NewTaxonomy(f.Terms)
}

// NewTaxonomy indexes terms and checks that kinds, slugs and aliases are
// valid and unique.
func NewTaxonomy(terms []*Term) (*Taxonomy, error) {
	t := &Taxonomy{Terms: terms, byKey: map[TermKey]*Term{}, byKind: map[TermKind][]*Term{}, alias: map[TermKey]*Term{}}
	for n, term := range terms {
		if !term.Kind.IsValid() {
			return nil, fmt.Errorf("taxonomy: term %d (%s): unknown kind %q", n, term.Slug, term.Kind)
		}
		if !ValidSlug(term.Slug) {
			return nil, fmt.Errorf("taxonomy: term %d: malformed slug %q", n, term.Slug)
		}
		if term.Label.IsZero() {
			return nil, fmt.Errorf("taxonomy: term %s:%s has no label", term.Kind, term.Slug)
		}
		k := TermKey{term.Kind, term.Slug}
		if t.byKey[k] != nil {
			return nil, fmt.Errorf("taxonomy: duplicate term %s:%s", term.Kind, term.Slug)
		}
		t.byKey[k] = term
		t.byKind[term.Kind] = append(t.byKind[term.Kind], term)
	}
	for _, term := range terms {
		for _, a := range append([]string{term.Slug}, term.Aliases...) {
			k := TermKey{term.Kind, a}
			if other := t.alias[k]; other != nil && other != term {
				return nil, fmt.Errorf("taxonomy: alias %q of %s:%s is already used by %s", a, term.Kind, term.Slug, other.Slug)
			}
			t.alias[k] = term
		}
	}
	for _, list := range t.byKind {
		sort.Slice(list, func(i, j int) bool { return list[i].Slug < list[j].Slug })
	}
	return t, nil
}

// Term returns the term of kind with slug, or nil.
func (t *Taxonomy) Term(kind TermKind, slug string) *Term { return t.byKey[TermKey{kind, slug}] }

// Kind returns every term of kind, ordered by slug.
func (t *Taxonomy) Kind(kind TermKind) []*Term { return t.byKind[kind] }

// Resolve maps a value of another collection (a slug or an alias, compared
// in lower case) onto a term of kind, or returns nil.
func (t *Taxonomy) Resolve(kind TermKind, value string) *Term {
	return t.alias[TermKey{kind, lower(value)}]
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
