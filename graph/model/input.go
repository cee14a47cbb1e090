package model

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// The inputs of the mutations: IL-JSON with camelCase names. JSON tags are
// the GraphQL names, so an input marshals to the variables of a mutation
// (incidentlib import --server sends records that way).

// IncidentInput is an incident to write.
type IncidentInput struct {
	ID                string                    `json:"id"`
	Org               string                    `json:"org"`
	OrgSlug           string                    `json:"orgSlug"`
	Date              string                    `json:"date,omitempty"`
	DateKind          string                    `json:"dateKind,omitempty"`
	Title             *TextInput                `json:"title"`
	Summary           *TextInput                `json:"summary,omitempty"`
	Lessons           *TextInput                `json:"lessons,omitempty"`
	Trigger           *TextInput                `json:"trigger,omitempty"`
	Detection         *TextInput                `json:"detection,omitempty"`
	SymptomsText      *TextInput                `json:"symptomsText,omitempty"`
	Domain            []string                  `json:"domain,omitempty"`
	Symptoms          []string                  `json:"symptoms,omitempty"`
	Components        []string                  `json:"components,omitempty"`
	Contributing      []string                  `json:"contributing,omitempty"`
	RootCause         string                    `json:"rootCause,omitempty"`
	Severity          string                    `json:"severity,omitempty"`
	Impact            *ImpactInput              `json:"impact,omitempty"`
	Timeline          *TimelineInput            `json:"timeline,omitempty"`
	Remediation       []*ItemInput              `json:"remediation,omitempty"`
	ActionItems       []*ItemInput              `json:"actionItems,omitempty"`
	Sources           []*SourceInput            `json:"sources,omitempty"`
	Docs              []json.RawMessage         `json:"docs,omitempty"`
	Related           []string                  `json:"related,omitempty"`
	RecurrenceOf      *string                   `json:"recurrenceOf,omitempty"` // a pointer: gqlgen's ID refuses an explicit null into a string
	Review            *ReviewInput              `json:"review,omitempty"`
	URL               string                    `json:"url,omitempty"`
	Verification      *incidentlib.Verification `json:"verification,omitempty"`
	OrganizationRoles []*OrganizationRoleInput  `json:"organizationRoles,omitempty"`
	TextOrigin        *TextOriginInput          `json:"textOrigin,omitempty"`
	Events            []*TimelineEventInput     `json:"events,omitempty"` // events.go
	Extra             json.RawMessage           `json:"extra,omitempty"`
	ExpectedUpdatedAt *string                   `json:"expectedUpdatedAt,omitempty"`
	ExpectedVersion   *int                      `json:"expectedVersion,omitempty"`
}

// OrganizationRoleInput is an organization other than the affected one,
// with its role (IL-JSON organization_roles).
type OrganizationRoleInput struct {
	Org     string                       `json:"org"`
	OrgSlug string                       `json:"orgSlug"`
	Role    incidentlib.OrganizationRole `json:"role"`
	Extra   json.RawMessage              `json:"extra,omitempty"`
}

// TextOriginInput is where each language's text came from (IL-JSON
// text_origin); Extra holds other languages.
type TextOriginInput struct {
	En    *incidentlib.TextOrigin `json:"en,omitempty"`
	Ko    *incidentlib.TextOrigin `json:"ko,omitempty"`
	Extra json.RawMessage         `json:"extra,omitempty"`
}

// TextInput is a text in English and Korean; Extra holds other languages.
type TextInput struct {
	En    string          `json:"en,omitempty"`
	Ko    string          `json:"ko,omitempty"`
	Extra json.RawMessage `json:"extra,omitempty"`
}

// ImpactInput is an incident's impact.
type ImpactInput struct {
	Scope  string          `json:"scope,omitempty"`
	Users  string          `json:"users,omitempty"`
	Region string          `json:"region,omitempty"`
	Extra  json.RawMessage `json:"extra,omitempty"`
}

// TimelineInput is an incident's timeline.
type TimelineInput struct {
	DetectedAfter string          `json:"detectedAfter,omitempty"`
	ResolvedAfter string          `json:"resolvedAfter,omitempty"`
	Extra         json.RawMessage `json:"extra,omitempty"`
}

// ItemInput is a remediation step or action item.
type ItemInput struct {
	Text  *TextInput      `json:"text"`
	Extra json.RawMessage `json:"extra,omitempty"`
}

// SourceInput is where an account was published.
type SourceInput struct {
	URL      string          `json:"url"`
	Kind     string          `json:"kind,omitempty"`
	Archived string          `json:"archived,omitempty"`
	Extra    json.RawMessage `json:"extra,omitempty"`
}

// ReviewInput is a record's review state.
type ReviewInput struct {
	WrittenBy  string          `json:"writtenBy,omitempty"`
	ReviewedAt string          `json:"reviewedAt,omitempty"`
	ReviewedBy string          `json:"reviewedBy,omitempty"`
	Extra      json.RawMessage `json:"extra,omitempty"`
}

// Incident converts the input to a record. The errors name input fields by
// their path below the input.
func (in *IncidentInput) Incident() (*incidentlib.Incident, incidentlib.Errors) {
	var es incidentlib.Errors
	extra := func(raw json.RawMessage, path ...string) incidentlib.Extra {
		x, err := extraOf(raw)
		if err != nil {
			es = append(es, incidentlib.FieldErrorf(incidentlib.EINVALID, append(path, "extra"), "%s.extra %s", strings.Join(path, "."), err))
		}
		return x
	}
	text := func(t *TextInput, path string) incidentlib.Text {
		if t == nil {
			return incidentlib.Text{}
		}
		return incidentlib.Text{En: t.En, Ko: t.Ko, Extra: extra(t.Extra, strings.Split(path, ".")...)}
	}
	items := func(list []*ItemInput, name string) []incidentlib.Item {
		out := make([]incidentlib.Item, 0, len(list))
		for n, it := range list {
			p := fmt.Sprintf("%s.%d", name, n)
			out = append(out, incidentlib.Item{Text: text(it.Text, p+".text"), Extra: extra(it.Extra, name, fmt.Sprint(n))})
		}
		return out
	}
	inc := &incidentlib.Incident{
		ID: in.ID, Org: in.Org, OrgSlug: in.OrgSlug, Date: in.Date, DateKind: in.DateKind,
		Title: text(in.Title, "title"), Summary: text(in.Summary, "summary"), Lessons: text(in.Lessons, "lessons"),
		Trigger: text(in.Trigger, "trigger"), Detection: text(in.Detection, "detection"),
		SymptomsText: text(in.SymptomsText, "symptomsText"),
		Domain:       in.Domain, Symptoms: in.Symptoms, Components: in.Components, Contributing: in.Contributing,
		RootCause: in.RootCause, Severity: in.Severity,
		Remediation: items(in.Remediation, "remediation"), ActionItems: items(in.ActionItems, "actionItems"),
		Docs: in.Docs, Related: in.Related, RecurrenceOf: deref(in.RecurrenceOf), URL: in.URL,
		Extra: extra(in.Extra),
	}
	if m := in.Impact; m != nil {
		inc.Impact = incidentlib.Impact{Scope: m.Scope, Users: m.Users, Region: m.Region, Extra: extra(m.Extra, "impact")}
	}
	if t := in.Timeline; t != nil {
		inc.Timeline = incidentlib.Timeline{DetectedAfter: t.DetectedAfter, ResolvedAfter: t.ResolvedAfter, Extra: extra(t.Extra, "timeline")}
	}
	for n, s := range in.Sources {
		inc.Sources = append(inc.Sources, incidentlib.Source{URL: s.URL, Kind: s.Kind, Archived: s.Archived,
			Extra: extra(s.Extra, "sources", fmt.Sprint(n))})
	}
	if r := in.Review; r != nil {
		inc.Review = incidentlib.Review{WrittenBy: r.WrittenBy, ReviewedAt: r.ReviewedAt, ReviewedBy: r.ReviewedBy, Extra: extra(r.Extra, "review")}
	}
	if v := in.Verification; v != nil {
		inc.Verification = *v
	}
	for n, r := range in.OrganizationRoles {
		inc.OrganizationRoles = append(inc.OrganizationRoles, incidentlib.OrgRole{Org: r.Org, OrgSlug: r.OrgSlug, Role: r.Role,
			Extra: extra(r.Extra, "organizationRoles", fmt.Sprint(n))})
	}
	if t := in.TextOrigin; t != nil {
		if t.En != nil {
			inc.TextOrigin.En = *t.En
		}
		if t.Ko != nil {
			inc.TextOrigin.Ko = *t.Ko
		}
		inc.TextOrigin.Extra = extra(t.Extra, "textOrigin")
	}
	inc.Events = eventsOf(in.Events, text, extra) // events.go
	return inc, es
}

// extraOf reads unknown fields given as one JSON object; null is none.
func extraOf(raw json.RawMessage) (incidentlib.Extra, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var x incidentlib.Extra
	if err := json.Unmarshal(raw, &x); err != nil {
		return nil, fmt.Errorf("must be a JSON object of fields")
	}
	if len(x) == 0 {
		return nil, nil
	}
	return x, nil
}

func rawOf(x incidentlib.Extra) json.RawMessage {
	if len(x) == 0 {
		return nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil
	}
	return b
}

// InputOf is the inverse of IncidentInput.Incident: the input that writes
// inc (all but updated_at, which a write stamps).
func InputOf(inc *incidentlib.Incident) *IncidentInput {
	text := func(t incidentlib.Text) *TextInput {
		if t.IsZero() && len(t.Extra) == 0 {
			return nil
		}
		return &TextInput{En: t.En, Ko: t.Ko, Extra: rawOf(t.Extra)}
	}
	items := func(list []incidentlib.Item) []*ItemInput {
		var out []*ItemInput
		for _, it := range list {
			t := text(it.Text)
			if t == nil {
				t = &TextInput{}
			}
			out = append(out, &ItemInput{Text: t, Extra: rawOf(it.Extra)})
		}
		return out
	}
	in := &IncidentInput{
		ID: inc.ID, Org: inc.Org, OrgSlug: inc.OrgSlug, Date: inc.Date, DateKind: inc.DateKind,
		Title: text(inc.Title), Summary: text(inc.Summary), Lessons: text(inc.Lessons), Trigger: text(inc.Trigger),
		Detection: text(inc.Detection), SymptomsText: text(inc.SymptomsText),
		Domain: inc.Domain, Symptoms: inc.Symptoms, Components: inc.Components, Contributing: inc.Contributing,
		RootCause: inc.RootCause, Severity: inc.Severity,
		Remediation: items(inc.Remediation), ActionItems: items(inc.ActionItems),
		Docs: inc.Docs, Related: inc.Related, RecurrenceOf: nonEmpty(inc.RecurrenceOf), URL: inc.URL, Extra: rawOf(inc.Extra),
	}
	if in.Title == nil {
		in.Title = &TextInput{}
	}
	//nolint:dupl // Impact and Review: two input types of three optional strings each
	if m := inc.Impact; m.Scope != "" || m.Users != "" || m.Region != "" || len(m.Extra) > 0 {
		in.Impact = &ImpactInput{Scope: m.Scope, Users: m.Users, Region: m.Region, Extra: rawOf(m.Extra)}
	}
	if t := inc.Timeline; t.DetectedAfter != "" || t.ResolvedAfter != "" || len(t.Extra) > 0 {
		in.Timeline = &TimelineInput{DetectedAfter: t.DetectedAfter, ResolvedAfter: t.ResolvedAfter, Extra: rawOf(t.Extra)}
	}
	for _, s := range inc.Sources {
		in.Sources = append(in.Sources, &SourceInput{URL: s.URL, Kind: s.Kind, Archived: s.Archived, Extra: rawOf(s.Extra)})
	}
	//nolint:dupl // see Impact above
	if r := inc.Review; r.WrittenBy != "" || r.ReviewedAt != "" || r.ReviewedBy != "" || len(r.Extra) > 0 {
		in.Review = &ReviewInput{WrittenBy: r.WrittenBy, ReviewedAt: r.ReviewedAt, ReviewedBy: r.ReviewedBy, Extra: rawOf(r.Extra)}
	}
	if inc.Verification != "" {
		v := inc.Verification
		in.Verification = &v
	}
	for _, r := range inc.OrganizationRoles {
		in.OrganizationRoles = append(in.OrganizationRoles, &OrganizationRoleInput{Org: r.Org, OrgSlug: r.OrgSlug, Role: r.Role, Extra: rawOf(r.Extra)})
	}
	if t := inc.TextOrigin; !t.IsZero() {
		ti := &TextOriginInput{Extra: rawOf(t.Extra)}
		if t.En != "" {
			ti.En = &t.En
		}
		if t.Ko != "" {
			ti.Ko = &t.Ko
		}
		in.TextOrigin = ti
	}
	in.Events = eventInputs(inc.Events, text) // events.go
	return in
}

// UserErrorCode is the GraphQL enum of user error codes.
type UserErrorCode string

// User error codes: the domain codes a mutation answers in its payload.
const (
	UserErrorCodeInvalid  UserErrorCode = incidentlib.EINVALID
	UserErrorCodeNotFound UserErrorCode = incidentlib.ENOTFOUND
	UserErrorCodeConflict UserErrorCode = incidentlib.ECONFLICT
	// The review workflow's refusals.
	UserErrorCodeSelfReview   UserErrorCode = incidentlib.ESELFREVIEW
	UserErrorCodeInvalidState UserErrorCode = incidentlib.EINVALIDSTATE
)

func (e UserErrorCode) IsValid() bool {
	switch e {
	case UserErrorCodeInvalid, UserErrorCodeNotFound, UserErrorCodeConflict, UserErrorCodeSelfReview, UserErrorCodeInvalidState:
		return true
	}
	return false
}
func (e UserErrorCode) String() string { return string(e) }

// UnmarshalGQL reads the enum.
func (e *UserErrorCode) UnmarshalGQL(v any) error {
	return incidentlib.UnmarshalEnum(e, v, "UserErrorCode", UserErrorCode.IsValid)
}

// MarshalGQL writes the enum.
func (e UserErrorCode) MarshalGQL(w io.Writer) { incidentlib.WriteEnum(w, string(e)) }

// UserError is a problem with a mutation's input.
type UserError struct {
	Field   []string      `json:"field"`
	Message string        `json:"message"`
	Code    UserErrorCode `json:"code"`
}

// IncidentPayload is the answer of upsertIncident and reviewIncident.
type IncidentPayload struct {
	Incident   *Incident
	UserErrors []*UserError
}

// DeleteIncidentPayload is the answer of deleteIncident.
type DeleteIncidentPayload struct {
	DeletedID   *string
	UnlinkedIds []string
	UserErrors  []*UserError
}

// ImportPayload is the answer of importIncidents.
type ImportPayload struct {
	Created    int
	Updated    int
	Unchanged  int
	UserErrors []*UserError
}

// UserErrors turns the application errors in err into user errors, their
// field paths in GraphQL's camelCase under prefix. ok is false when err
// holds an error that is not the user's to fix (internal, timeout, ...):
// the caller returns err itself.
func UserErrors(prefix []string, err error) (out []*UserError, ok bool) {
	list := incidentlib.ErrorList(err)
	if len(list) == 0 {
		return nil, false
	}
	for _, e := range list {
		code := UserErrorCode(e.Code)
		if !code.IsValid() {
			return nil, false
		}
		out = append(out, &UserError{Field: FieldPath(prefix, e.Field), Message: e.Message, Code: code})
	}
	return out, true
}

// FieldPath is a domain field path (IL-JSON names such as
// ["timeline", "detected_after"]) as a GraphQL input path under prefix.
func FieldPath(prefix, field []string) []string {
	if len(prefix) == 0 && len(field) == 0 {
		return nil
	}
	out := make([]string, 0, len(prefix)+len(field))
	out = append(out, prefix...)
	for _, f := range field {
		out = append(out, camel(f))
	}
	return out
}

// camel turns snake_case into camelCase.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if p := parts[i]; p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

// deref is *p, or "" for nil (an explicit null or an absent field).
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// nonEmpty is &s, or nil for "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
