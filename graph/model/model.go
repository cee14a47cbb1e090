// Package model holds the GraphQL view of the domain types: thin wrappers
// that pick a language and turn empty values into nulls, and the models
// gqlgen generates for enums and connections.
package model

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/incidentlib/incidentlib"
)

// View is what every wrapper of one request shares: the request's default
// language and the taxonomy. A View made by NewView also holds one wrapper
// per taxonomy term, made once and shared by every request in its
// language, so that listing an incident's terms allocates nothing per term.
type View struct {
	Lang incidentlib.Lang
	Tax  *incidentlib.Taxonomy

	terms *[numKinds]map[string]*TaxonomyTerm // by kind (kindSlot), then slug: one string hashed per lookup
}

// numKinds is the number of term kinds (incidentlib.TermKinds).
const numKinds = 6

// kindSlot is k's index in View.terms, or -1 for an unknown kind.
func kindSlot(k incidentlib.TermKind) int {
	switch k {
	case incidentlib.KindDomain:
		return 0
	case incidentlib.KindSymptom:
		return 1
	case incidentlib.KindComponent:
		return 2
	case incidentlib.KindRootCause:
		return 3
	case incidentlib.KindContributing:
		return 4
	case incidentlib.KindSeverity:
		return 5
	}
	return -1
}

// term is the shared wrapper of the term of kind with slug, or nil.
func (v *View) term(kind incidentlib.TermKind, slug string) *TaxonomyTerm {
	if k := kindSlot(kind); k >= 0 && v.terms != nil {
		return v.terms[k][slug]
	}
	return nil
}

// NewView returns the view of lang over tax, with a wrapper for each term.
// Views and their wrappers are read-only and may be shared by requests.
func NewView(lang incidentlib.Lang, tax *incidentlib.Taxonomy) *View {
	v := &View{Lang: lang, Tax: tax}
	if tax != nil {
		v.terms = new([numKinds]map[string]*TaxonomyTerm)
		for _, t := range tax.Terms {
			k := kindSlot(t.Kind)
			if k < 0 {
				continue // not one of incidentlib.TermKinds: no shared wrapper
			}
			if v.terms[k] == nil {
				v.terms[k] = map[string]*TaxonomyTerm{}
			}
			v.terms[k][t.Slug] = &TaxonomyTerm{Term: t, View: v}
		}
	}
	return v
}

// Term returns the wrapper of the term of kind with slug, or nil.
func (v *View) Term(kind incidentlib.TermKind, slug string) *TaxonomyTerm {
	if v.terms != nil {
		return v.term(kind, slug)
	}
	return v.NewTerm(v.Tax.Term(kind, slug))
}

func (v *View) lang(l *Lang) incidentlib.Lang {
	if l != nil {
		return LangOf(*l)
	}
	return v.Lang
}

// LangOf converts the GraphQL enum to the domain language.
func LangOf(l Lang) incidentlib.Lang {
	if l == LangKo {
		return incidentlib.LangKo
	}
	return incidentlib.LangEn
}

// field returns p, or nil for an empty string. p points into a record,
// which is shared and never changed, so no copy is made.
func field(p *string) *string {
	if *p == "" {
		return nil
	}
	return p
}

// text returns t in lang, falling back to the other language (as
// Text.In), as a pointer into t, or nil when t is empty.
func text(t *incidentlib.Text, lang incidentlib.Lang) *string {
	first, second := &t.En, &t.Ko
	if lang == incidentlib.LangKo {
		first, second = second, first
	}
	if *first != "" {
		return first
	}
	return field(second)
}

// Incident is an incident as GraphQL shows it.
type Incident struct {
	Inc  *incidentlib.Incident
	View *View
}

// NewIncident wraps inc, or returns nil for nil.
func (v *View) NewIncident(inc *incidentlib.Incident) *Incident {
	if inc == nil {
		return nil
	}
	return &Incident{Inc: inc, View: v}
}

// NewIncidents wraps the incidents of incs that are not nil, in order, with
// two allocations whatever their number.
func (v *View) NewIncidents(incs []*incidentlib.Incident) []*Incident {
	n := 0
	for _, inc := range incs {
		if inc != nil {
			n++
		}
	}
	out := make([]*Incident, 0, n)
	if n == 0 {
		return out
	}
	slab := make([]Incident, 0, n)
	for _, inc := range incs {
		if inc != nil {
			slab = append(slab, Incident{Inc: inc, View: v})
			out = append(out, &slab[len(slab)-1])
		}
	}
	return out
}

// IsNode marks Incident as a Node.
func (*Incident) IsNode() {}

func (i *Incident) GetID() string      { return i.Inc.ID }
func (i *Incident) ID() string         { return i.Inc.ID }
func (i *Incident) Org() string        { return i.Inc.Org }
func (i *Incident) OrgSlug() string    { return i.Inc.OrgSlug }
func (i *Incident) Date() *string      { return field(&i.Inc.Date) }
func (i *Incident) DateKind() *string  { return field(&i.Inc.DateKind) }
func (i *Incident) UpdatedAt() *string { return field(&i.Inc.UpdatedAt) }
func (i *Incident) URL() *string       { return field(&i.Inc.URL) }

func (i *Incident) Title(lang *Lang) *string     { return text(&i.Inc.Title, i.View.lang(lang)) }
func (i *Incident) Summary(lang *Lang) *string   { return text(&i.Inc.Summary, i.View.lang(lang)) }
func (i *Incident) Lessons(lang *Lang) *string   { return text(&i.Inc.Lessons, i.View.lang(lang)) }
func (i *Incident) Trigger(lang *Lang) *string   { return text(&i.Inc.Trigger, i.View.lang(lang)) }
func (i *Incident) Detection(lang *Lang) *string { return text(&i.Inc.Detection, i.View.lang(lang)) }
func (i *Incident) SymptomsText(lang *Lang) *string {
	return text(&i.Inc.SymptomsText, i.View.lang(lang))
}

// Languages lists the languages the title is written in.
func (i *Incident) Languages() []Lang {
	var out []Lang
	if i.Inc.Title.En != "" {
		out = append(out, LangEn)
	}
	if i.Inc.Title.Ko != "" {
		out = append(out, LangKo)
	}
	return out
}

func (i *Incident) Impact() *Impact     { return &Impact{&i.Inc.Impact} }
func (i *Incident) Timeline() *Timeline { return &Timeline{&i.Inc.Timeline} }
func (i *Incident) Review() *Review     { return &Review{&i.Inc.Review} }

func (i *Incident) items(list []incidentlib.Item) []*Item {
	out := make([]*Item, len(list))
	slab := make([]Item, len(list))
	for n := range list {
		slab[n] = Item{it: &list[n], view: i.View}
		out[n] = &slab[n]
	}
	return out
}

func (i *Incident) Remediation() []*Item { return i.items(i.Inc.Remediation) }
func (i *Incident) ActionItems() []*Item { return i.items(i.Inc.ActionItems) }

func (i *Incident) Sources() []*Source {
	out := make([]*Source, len(i.Inc.Sources))
	slab := make([]Source, len(i.Inc.Sources))
	for n := range i.Inc.Sources {
		slab[n] = Source{&i.Inc.Sources[n]}
		out[n] = &slab[n]
	}
	return out
}

func (i *Incident) Docs() []json.RawMessage {
	if i.Inc.Docs == nil {
		return []json.RawMessage{}
	}
	return i.Inc.Docs
}

func (i *Incident) RelatedIds() []string {
	if i.Inc.Related == nil {
		return []string{}
	}
	return i.Inc.Related
}

func (i *Incident) RecurrenceOfID() *string { return field(&i.Inc.RecurrenceOf) }

// Extra returns the fields the library does not interpret, as one object.
func (i *Incident) Extra() json.RawMessage {
	if len(i.Inc.Extra) == 0 {
		return nil
	}
	b, err := json.Marshal(i.Inc.Extra)
	if err != nil {
		return nil
	}
	return b
}

func (i *Incident) terms(kind incidentlib.TermKind, slugs []string) []*TaxonomyTerm {
	out := make([]*TaxonomyTerm, 0, len(slugs))
	for _, s := range slugs {
		if t := i.View.Term(kind, s); t != nil {
			out = append(out, t)
		}
	}
	return out
}

func (i *Incident) Domains() []*TaxonomyTerm { return i.terms(incidentlib.KindDomain, i.Inc.Domain) }
func (i *Incident) Symptoms() []*TaxonomyTerm {
	return i.terms(incidentlib.KindSymptom, i.Inc.Symptoms)
}
func (i *Incident) Components() []*TaxonomyTerm {
	return i.terms(incidentlib.KindComponent, i.Inc.Components)
}
func (i *Incident) Contributing() []*TaxonomyTerm {
	return i.terms(incidentlib.KindContributing, i.Inc.Contributing)
}
func (i *Incident) RootCause() *TaxonomyTerm {
	return i.View.Term(incidentlib.KindRootCause, i.Inc.RootCause)
}
func (i *Incident) Severity() *TaxonomyTerm {
	return i.View.Term(incidentlib.KindSeverity, i.Inc.Severity)
}

// Impact is an incident's impact.
type Impact struct{ m *incidentlib.Impact }

func (m *Impact) Scope() *string  { return field(&m.m.Scope) }
func (m *Impact) Users() *string  { return field(&m.m.Users) }
func (m *Impact) Region() *string { return field(&m.m.Region) }

// Timeline is an incident's timeline.
type Timeline struct{ t *incidentlib.Timeline }

func (t *Timeline) DetectedAfter() *string { return field(&t.t.DetectedAfter) }
func (t *Timeline) ResolvedAfter() *string { return field(&t.t.ResolvedAfter) }
func (t *Timeline) DetectedAfterSeconds() *int {
	return seconds(t.t.DetectedAfter)
}
func (t *Timeline) ResolvedAfterSeconds() *int { return seconds(t.t.ResolvedAfter) }

func seconds(s string) *int {
	if s == "" {
		return nil
	}
	d, err := incidentlib.ParseDuration(s)
	if err != nil {
		return nil
	}
	n := int(d.Seconds())
	return &n
}

// Item is a remediation step or action item.
type Item struct {
	it   *incidentlib.Item
	view *View
}

func (it *Item) Text(lang *Lang) *string { return text(&it.it.Text, it.view.lang(lang)) }

// Source is where an account was published.
type Source struct{ s *incidentlib.Source }

func (s *Source) URL() string       { return s.s.URL }
func (s *Source) Kind() *string     { return field(&s.s.Kind) }
func (s *Source) Archived() *string { return field(&s.s.Archived) }

// Status, CheckedAt and FinalURL are the source's last link check
// (incidentlib.SourceCheck); null if it was never checked.
func (s *Source) Status() *int {
	if c, ok := s.s.Check(); ok {
		return &c.Status
	}
	return nil
}
func (s *Source) CheckedAt() *string {
	c, _ := s.s.Check()
	return field(&c.CheckedAt)
}
func (s *Source) FinalURL() *string {
	c, _ := s.s.Check()
	return field(&c.FinalURL)
}

// Review is a record's review state.
type Review struct{ r *incidentlib.Review }

func (r *Review) WrittenBy() *string  { return field(&r.r.WrittenBy) }
func (r *Review) ReviewedAt() *string { return field(&r.r.ReviewedAt) }
func (r *Review) ReviewedBy() *string { return field(&r.r.ReviewedBy) }

// TaxonomyTerm is a term as GraphQL shows it.
type TaxonomyTerm struct {
	Term *incidentlib.Term
	View *View
}

// NewTerm wraps t, or returns nil for nil. A term of the view's taxonomy
// gets its shared wrapper.
func (v *View) NewTerm(t *incidentlib.Term) *TaxonomyTerm {
	if t == nil {
		return nil
	}
	if w := v.term(t.Kind, t.Slug); w != nil && w.Term == t {
		return w
	}
	return &TaxonomyTerm{Term: t, View: v}
}

// IsNode marks TaxonomyTerm as a Node.
func (*TaxonomyTerm) IsNode() {}

func (t *TaxonomyTerm) GetID() string           { return t.Term.ID() }
func (t *TaxonomyTerm) ID() string              { return t.Term.ID() }
func (t *TaxonomyTerm) Kind() TaxonomyKind      { return KindOf(t.Term.Kind) }
func (t *TaxonomyTerm) Slug() string            { return t.Term.Slug }
func (t *TaxonomyTerm) Label(lang *Lang) string { return t.Term.Label.In(t.View.lang(lang)) }
func (t *TaxonomyTerm) Description(lang *Lang) *string {
	return text(&t.Term.Description, t.View.lang(lang))
}

// KindOf converts a domain kind to the GraphQL enum.
func KindOf(k incidentlib.TermKind) TaxonomyKind {
	return TaxonomyKind(strings.ToUpper(string(k)))
}

// TermKindOf converts the GraphQL enum to the domain kind.
func TermKindOf(k TaxonomyKind) incidentlib.TermKind {
	return incidentlib.TermKind(strings.ToLower(string(k)))
}

// Organization is an organization as GraphQL shows it.
type Organization struct {
	*incidentlib.Organization
}

// IsNode marks Organization as a Node.
func (Organization) IsNode() {}

func (o Organization) GetID() string { return o.Organization.ID() }

// SimilarIncident is an incident ranked by shared terms.
type SimilarIncident struct {
	Incident         *Incident
	Score            float64
	SharedTerms      []*TaxonomyTerm
	SameOrganization bool
	SharedWords      []string
}

// IncidentConnection is a page of incidents with what it needs to compute
// its facets and years on demand.
type IncidentConnection struct {
	Edges      []*IncidentEdge
	Nodes      []*Incident
	PageInfo   *PageInfo
	TotalCount int
	Filter     incidentlib.IncidentFilter
}

// IncidentEdge is one incident of a connection.
type IncidentEdge struct {
	Cursor string
	Node   *Incident
}

// Facet is one kind's term counts.
type Facet struct {
	Kind   TaxonomyKind
	Counts []*TermCount
}

// TermCount is one term's count.
type TermCount struct {
	Term  *TaxonomyTerm
	Count int
}

// MarshalJSON writes raw JSON as a GraphQL value, compact and escaped as
// encoding/json writes it (json.Marshal of a json.RawMessage), so that the
// executor's output is the final response text: the server writes it
// without a second pass.
func MarshalJSON(v json.RawMessage) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		if len(v) == 0 {
			_, _ = io.WriteString(w, "null")
			return
		}
		if b, err := json.Marshal(v); err == nil {
			v = b
		}
		_, _ = w.Write(v)
	})
}

// UnmarshalJSON reads any GraphQL input value as raw JSON.
func UnmarshalJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("JSON: %w", err)
	}
	return b, nil
}

// Verification is what kind of account the record is made from, UNKNOWN
// when it does not say.
func (i *Incident) Verification() incidentlib.Verification { return i.Inc.Verification.OrUnknown() }

// TextOrigin is where the text served in lang (the request's language
// without one; the other language when the title has none in it) came
// from, ORIGINAL when the record does not say.
func (i *Incident) TextOrigin(lang *Lang) incidentlib.TextOrigin {
	return i.Inc.TextOriginIn(i.View.lang(lang))
}

// IncidentOrganization is an organization an incident names, with its role.
type IncidentOrganization struct {
	Organization *Organization
	Role         incidentlib.OrganizationRole
}
