// Package incidentlib holds the domain of the incident library: the record
// types (IL-JSON), taxonomy terms, filters and pages, the service interfaces
// the rest of the program talks to, and the one error type.
//
// storage/ implements the services on bbolt; graph/ serves them over GraphQL;
// cmd/incidentlib wires them together.
package incidentlib

import (
	"encoding/json"

	"github.com/incidentlib/incidentlib/iljson"
)

// Text is a piece of text in English and Korean; either may be empty.
// Other languages a record carries are kept in Extra.
type Text struct {
	En    string `json:"en,omitempty"`
	Ko    string `json:"ko,omitempty"`
	Extra Extra  `json:"-"`
}

type textJSON struct {
	En string `json:"en,omitempty"`
	Ko string `json:"ko,omitempty"`
}

var textKnown = map[string]bool{"en": true, "ko": true}

// MarshalJSON writes the languages present.
func (t Text) MarshalJSON() ([]byte, error) { return iljson.Marshal(t) }

// Wire returns the wire form and the unknown members (iljson.WireForm).
func (t Text) Wire() (any, Extra) { return textJSON{t.En, t.Ko}, t.Extra }

// UnmarshalJSON reads a text object; null is an empty text.
//
//nolint:dupl // see TextOrigins.UnmarshalJSON
func (t *Text) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, t, textKnown, iljson.NullIsZero, func(w textJSON, extra Extra) Text {
		return Text{En: w.En, Ko: w.Ko, Extra: extra}
	})
}

// IsZero reports whether neither language is present.
func (t Text) IsZero() bool { return t.En == "" && t.Ko == "" }

// In returns the text in lang, falling back to the other language.
func (t Text) In(lang Lang) string {
	if lang == LangKo {
		if t.Ko != "" {
			return t.Ko
		}
		return t.En
	}
	if t.En != "" {
		return t.En
	}
	return t.Ko
}

// Lang is a language of the library.
type Lang string

// Languages of the library.
const (
	LangEn Lang = "EN"
	LangKo Lang = "KO"
)

// IsValid reports whether l is a known language.
func (l Lang) IsValid() bool { return l == LangEn || l == LangKo }

// Impact says whom and what an incident affected.
type Impact struct {
	Scope  string `json:"scope,omitempty"`
	Users  string `json:"users,omitempty"`
	Region string `json:"region,omitempty"`
	Extra  Extra  `json:"-"`
}

// Timeline holds how long detection and resolution took, as durations such
// as "73h", "45m" or "2h30m"; empty when unknown.
type Timeline struct {
	DetectedAfter string `json:"detected_after"`
	ResolvedAfter string `json:"resolved_after"`
	Extra         Extra  `json:"-"`
}

// Item is one remediation step or action item.
type Item struct {
	Text  Text  `json:"text"`
	Extra Extra `json:"-"`
}

// Source is where an incident's account was published.
type Source struct {
	URL      string `json:"url"`
	Kind     string `json:"kind,omitempty"`
	Archived string `json:"archived,omitempty"`
	Extra    Extra  `json:"-"`
}

// Review records who wrote a record and whether it was reviewed.
type Review struct {
	WrittenBy  string `json:"written_by,omitempty"`
	ReviewedAt string `json:"reviewed_at,omitempty"`
	ReviewedBy string `json:"reviewed_by,omitempty"`
	Extra      Extra  `json:"-"`
}

// Incident is one postmortem record in the library's own format, IL-JSON.
//
// Fields the program does not know are kept in Extra and written back on
// export, so a round trip never drops data.
type Incident struct {
	ID           string            `json:"id"`
	Org          string            `json:"org"`
	OrgSlug      string            `json:"org_slug"`
	Date         string            `json:"date"`      // YYYY-MM-DD or empty
	DateKind     string            `json:"date_kind"` // "incident", "published", ...
	Title        Text              `json:"title"`
	Summary      Text              `json:"summary"`
	Lessons      Text              `json:"lessons"`
	Trigger      Text              `json:"trigger"`
	Detection    Text              `json:"detection"`
	SymptomsText Text              `json:"symptoms_text"`
	Domain       []string          `json:"domain"`
	Symptoms     []string          `json:"symptoms"`
	Components   []string          `json:"components"`
	Contributing []string          `json:"contributing"`
	RootCause    string            `json:"root_cause"`
	Severity     string            `json:"severity"`
	Impact       Impact            `json:"impact"`
	Timeline     Timeline          `json:"timeline"`
	Remediation  []Item            `json:"remediation"`
	ActionItems  []Item            `json:"action_items"`
	Sources      []Source          `json:"sources"`
	Docs         []json.RawMessage `json:"docs"`
	Related      []string          `json:"related"`
	RecurrenceOf string            `json:"recurrence_of"`
	Review       Review            `json:"review"`
	UpdatedAt    string            `json:"updated_at"` // RFC 3339, kept exactly as given
	URL          string            `json:"url"`
	// Provenance (provenance.go), all optional: empty reads as UNKNOWN, no
	// other organizations, ORIGINAL.
	Verification      Verification `json:"verification,omitempty"`
	OrganizationRoles []OrgRole    `json:"organization_roles,omitempty"`
	TextOrigin        TextOrigins  `json:"text_origin,omitempty"`
	// Events is the typed timeline (events.go), in order.
	Events []Event `json:"events,omitempty"`
	// History (history.go), all optional and kept by the store: when the
	// incident was created (empty where unknown), its review state (empty
	// reads as State says) and its version (0 reads as 1).
	CreatedAt   string      `json:"created_at,omitempty"`
	ReviewState ReviewState `json:"review_state,omitempty"`
	Version     int         `json:"version,omitempty"`
	Extra       Extra       `json:"-"`
}

// Extra holds the fields of a JSON object that the program does not know,
// by name, as raw JSON (the codec's type: iljson.Extra).
type Extra = iljson.Extra

// incidentJSON is the wire form of Incident: optional scalars are null when
// empty, lists are [] when empty, so that every record has the same shape.
type incidentJSON struct {
	ID           string            `json:"id"`
	Org          string            `json:"org"`
	OrgSlug      string            `json:"org_slug"`
	Date         *string           `json:"date"`
	DateKind     *string           `json:"date_kind"`
	Title        Text              `json:"title"`
	Summary      Text              `json:"summary"`
	Lessons      Text              `json:"lessons"`
	Trigger      Text              `json:"trigger"`
	Detection    Text              `json:"detection"`
	SymptomsText Text              `json:"symptoms_text"`
	Domain       []string          `json:"domain"`
	Symptoms     []string          `json:"symptoms"`
	Components   []string          `json:"components"`
	Contributing []string          `json:"contributing"`
	RootCause    *string           `json:"root_cause"`
	Severity     *string           `json:"severity"`
	Impact       Impact            `json:"impact"`
	Timeline     Timeline          `json:"timeline"`
	Remediation  []Item            `json:"remediation"`
	ActionItems  []Item            `json:"action_items"`
	Sources      []Source          `json:"sources"`
	Docs         []json.RawMessage `json:"docs"`
	Related      []string          `json:"related"`
	RecurrenceOf *string           `json:"recurrence_of"`
	Review       Review            `json:"review"`
	UpdatedAt    *string           `json:"updated_at"`
	URL          *string           `json:"url"`
	// Optional members, left out when empty so that a record without them
	// is written back as it was.
	Verification      Verification `json:"verification,omitempty"`
	OrganizationRoles []OrgRole    `json:"organization_roles,omitempty"`
	TextOrigin        *TextOrigins `json:"text_origin,omitempty"`
	Events            []Event      `json:"events,omitempty"`
	CreatedAt         string       `json:"created_at,omitempty"`
	ReviewState       ReviewState  `json:"review_state,omitempty"`
	Version           int          `json:"version,omitempty"`
}

var incidentKnown = iljson.KnownFields(incidentJSON{})

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func strVal(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MarshalJSON writes the canonical IL-JSON form of the record: every known
// field in a fixed order, then unknown fields in name order.
func (i Incident) MarshalJSON() ([]byte, error) { return iljson.Marshal(i) }

// Wire returns the wire form and the unknown members (iljson.WireForm).
func (i Incident) Wire() (any, Extra) {
	w := incidentJSON{
		ID: i.ID, Org: i.Org, OrgSlug: i.OrgSlug,
		Date: strPtr(i.Date), DateKind: strPtr(i.DateKind),
		Title: i.Title, Summary: i.Summary, Lessons: i.Lessons, Trigger: i.Trigger,
		Detection: i.Detection, SymptomsText: i.SymptomsText,
		Domain: nonNil(i.Domain), Symptoms: nonNil(i.Symptoms), Components: nonNil(i.Components),
		Contributing: nonNil(i.Contributing),
		RootCause:    strPtr(i.RootCause), Severity: strPtr(i.Severity),
		Impact: i.Impact, Timeline: i.Timeline,
		Remediation: nonNil(i.Remediation), ActionItems: nonNil(i.ActionItems),
		Sources: nonNil(i.Sources), Docs: nonNil(i.Docs), Related: nonNil(i.Related),
		RecurrenceOf: strPtr(i.RecurrenceOf), Review: i.Review,
		UpdatedAt: strPtr(i.UpdatedAt), URL: strPtr(i.URL),
		Verification: i.Verification, OrganizationRoles: i.OrganizationRoles,
		CreatedAt: i.CreatedAt, ReviewState: i.ReviewState, Version: i.Version, Events: i.Events,
	}
	if !i.TextOrigin.IsZero() {
		w.TextOrigin = &i.TextOrigin
	}
	return w, i.Extra
}

// UnmarshalJSON reads an IL-JSON record, keeping unknown fields in Extra.
func (i *Incident) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, i, incidentKnown, iljson.NullIsError, incidentFromWire)
}

func incidentFromWire(w incidentJSON, extra Extra) Incident {
	return Incident{
		ID: w.ID, Org: w.Org, OrgSlug: w.OrgSlug, Date: strVal(w.Date), DateKind: strVal(w.DateKind),
		Title: w.Title, Summary: w.Summary, Lessons: w.Lessons, Trigger: w.Trigger,
		Detection: w.Detection, SymptomsText: w.SymptomsText,
		Domain: w.Domain, Symptoms: w.Symptoms, Components: w.Components, Contributing: w.Contributing,
		RootCause: strVal(w.RootCause), Severity: strVal(w.Severity),
		Impact: w.Impact, Timeline: w.Timeline, Remediation: w.Remediation, ActionItems: w.ActionItems,
		Sources: w.Sources, Docs: w.Docs, Related: w.Related, RecurrenceOf: strVal(w.RecurrenceOf),
		Review: w.Review, UpdatedAt: strVal(w.UpdatedAt), URL: strVal(w.URL), Extra: extra,
		Verification: w.Verification, OrganizationRoles: w.OrganizationRoles, TextOrigin: textOriginsOf(w.TextOrigin),
		Events:    w.Events,
		CreatedAt: w.CreatedAt, ReviewState: w.ReviewState, Version: w.Version,
	}
}

func textOriginsOf(t *TextOrigins) TextOrigins {
	if t == nil {
		return TextOrigins{}
	}
	return *t
}

type impactJSON struct {
	Scope  *string `json:"scope"`
	Users  *string `json:"users"`
	Region *string `json:"region"`
}

var impactKnown = iljson.KnownFields(impactJSON{})

// MarshalJSON writes the impact with null for unknown parts.
//
//nolint:dupl // Impact and Review are both three optional strings: the same shape of data, each its own fields.
func (m Impact) MarshalJSON() ([]byte, error) { return iljson.Marshal(m) }

// Wire returns the wire form and the unknown members (iljson.WireForm).
func (m Impact) Wire() (any, Extra) {
	return impactJSON{strPtr(m.Scope), strPtr(m.Users), strPtr(m.Region)}, m.Extra
}

// UnmarshalJSON reads an impact, keeping unknown fields.
//
//nolint:dupl // as MarshalJSON
func (m *Impact) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, m, impactKnown, iljson.NullIsZero, func(w impactJSON, extra Extra) Impact {
		return Impact{Scope: strVal(w.Scope), Users: strVal(w.Users), Region: strVal(w.Region), Extra: extra}
	})
}

type timelineJSON struct {
	DetectedAfter *string `json:"detected_after"`
	ResolvedAfter *string `json:"resolved_after"`
}

var timelineKnown = iljson.KnownFields(timelineJSON{})

// MarshalJSON writes the timeline with null for unknown durations.
func (t Timeline) MarshalJSON() ([]byte, error) { return iljson.Marshal(t) }

// Wire returns the wire form and the unknown members (iljson.WireForm).
func (t Timeline) Wire() (any, Extra) {
	return timelineJSON{strPtr(t.DetectedAfter), strPtr(t.ResolvedAfter)}, t.Extra
}

// UnmarshalJSON reads a timeline, keeping unknown fields.
func (t *Timeline) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, t, timelineKnown, iljson.NullIsZero, func(w timelineJSON, extra Extra) Timeline {
		return Timeline{DetectedAfter: strVal(w.DetectedAfter), ResolvedAfter: strVal(w.ResolvedAfter), Extra: extra}
	})
}

type itemJSON struct {
	Text Text `json:"text"`
}

var itemKnown = iljson.KnownFields(itemJSON{})

// MarshalJSON writes the item.
func (it Item) MarshalJSON() ([]byte, error) { return iljson.Marshal(it) }

// Wire returns the wire form and the unknown members (iljson.WireForm).
func (it Item) Wire() (any, Extra) { return itemJSON{it.Text}, it.Extra }

// UnmarshalJSON reads an item, keeping unknown fields.
func (it *Item) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, it, itemKnown, iljson.NullIsError, func(w itemJSON, extra Extra) Item {
		return Item{Text: w.Text, Extra: extra}
	})
}

type sourceJSON struct {
	URL      string  `json:"url"`
	Kind     *string `json:"kind"`
	Archived *string `json:"archived"`
}

var sourceKnown = iljson.KnownFields(sourceJSON{})

// MarshalJSON writes the source.
func (s Source) MarshalJSON() ([]byte, error) { return iljson.Marshal(s) }

// Wire returns the wire form and the unknown members (iljson.WireForm).
func (s Source) Wire() (any, Extra) {
	return sourceJSON{s.URL, strPtr(s.Kind), strPtr(s.Archived)}, s.Extra
}

// UnmarshalJSON reads a source, keeping unknown fields.
func (s *Source) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, s, sourceKnown, iljson.NullIsError, func(w sourceJSON, extra Extra) Source {
		return Source{URL: w.URL, Kind: strVal(w.Kind), Archived: strVal(w.Archived), Extra: extra}
	})
}

type reviewJSON struct {
	WrittenBy  *string `json:"written_by"`
	ReviewedAt *string `json:"reviewed_at"`
	ReviewedBy *string `json:"reviewed_by"`
}

var reviewKnown = iljson.KnownFields(reviewJSON{})

// MarshalJSON writes the review with null for what has not happened.
//
//nolint:dupl // Impact and Review are both three optional strings: the same shape of data, each its own fields.
func (r Review) MarshalJSON() ([]byte, error) { return iljson.Marshal(r) }

// Wire returns the wire form and the unknown members (iljson.WireForm).
func (r Review) Wire() (any, Extra) {
	return reviewJSON{strPtr(r.WrittenBy), strPtr(r.ReviewedAt), strPtr(r.ReviewedBy)}, r.Extra
}

// UnmarshalJSON reads a review, keeping unknown fields.
//
//nolint:dupl // as MarshalJSON
func (r *Review) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, r, reviewKnown, iljson.NullIsZero, func(w reviewJSON, extra Extra) Review {
		return Review{WrittenBy: strVal(w.WrittenBy), ReviewedAt: strVal(w.ReviewedAt), ReviewedBy: strVal(w.ReviewedBy), Extra: extra}
	})
}
