package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentlib/incidentlib"
)

// GetArgs are get_incident's arguments.
type GetArgs struct {
	ID   string `json:"id" jsonschema:"the incident's id, such as IL-0213"`
	Lang Lang   `json:"lang,omitempty"`
}

// Term is a taxonomy term.
type Term struct {
	Slug  string `json:"slug"`
	Label string `json:"label"`
}

// Incident is get_incident's structured content.
type Incident struct {
	ID              string   `json:"id"`
	Title           string   `json:"title"`
	Org             string   `json:"org"`
	OrgSlug         string   `json:"orgSlug"`
	Date            string   `json:"date,omitempty"`
	DateKind        string   `json:"dateKind,omitempty"`
	Summary         string   `json:"summary,omitempty"`
	Trigger         string   `json:"trigger,omitempty"`
	Detection       string   `json:"detection,omitempty"`
	SymptomsText    string   `json:"symptomsText,omitempty"`
	Lessons         string   `json:"lessons,omitempty"`
	Languages       []string `json:"languages"`
	TextOrigin      string   `json:"textOrigin"`
	Verification    string   `json:"verification"`
	ReviewState     string   `json:"reviewState"`
	WithdrawnReason string   `json:"withdrawnReason,omitempty"`
	Version         int      `json:"version"`
	UpdatedAt       string   `json:"updatedAt,omitempty"`
	ImpactScope     string   `json:"impactScope,omitempty"`
	ImpactUsers     string   `json:"impactUsers,omitempty"`
	ImpactRegion    string   `json:"impactRegion,omitempty"`
	DetectedAfter   string   `json:"detectedAfter,omitempty"`
	ResolvedAfter   string   `json:"resolvedAfter,omitempty"`
	Domains         []Term   `json:"domains"`
	Symptoms        []Term   `json:"symptoms"`
	Components      []Term   `json:"components"`
	Contributing    []Term   `json:"contributing"`
	RootCause       *Term    `json:"rootCause,omitempty"`
	Severity        *Term    `json:"severity,omitempty"`
	Remediation     []string `json:"remediation"`
	ActionItems     []string `json:"actionItems"`
	Sources         []string `json:"sources" jsonschema:"the URLs of the accounts the record is made from"`
	RelatedIDs      []string `json:"relatedIds"`
	RecurrenceOf    string   `json:"recurrenceOf,omitempty"`
}

const getQuery = `query ($id: ID!, $lang: Lang) {
  incident(id: $id) {
    id title(lang: $lang) org orgSlug date dateKind
    summary(lang: $lang) trigger(lang: $lang) detection(lang: $lang) symptomsText(lang: $lang) lessons(lang: $lang)
    languages textOrigin(lang: $lang) verification reviewState withdrawnReason version updatedAt
    impact { scope users region } timeline { detectedAfter resolvedAfter }
    domains { ...T } symptoms { ...T } components { ...T } contributing { ...T } rootCause { ...T } severity { ...T }
    remediation { text(lang: $lang) } actionItems { text(lang: $lang) } sources { url }
    relatedIds recurrenceOfId
  }
}
fragment T on TaxonomyTerm { slug label(lang: $lang) }`

type gqlIncident struct {
	ID, Org, OrgSlug                                   string
	Title, Date, DateKind                              *string
	Summary, Trigger, Detection, SymptomsText, Lessons *string
	Languages                                          []string
	TextOrigin, Verification, ReviewState              string
	WithdrawnReason, UpdatedAt                         *string
	Version                                            int
	Impact                                             struct{ Scope, Users, Region *string }
	Timeline                                           struct{ DetectedAfter, ResolvedAfter *string }
	Domains, Symptoms, Components, Contributing        []Term
	RootCause, Severity                                *Term
	Remediation, ActionItems                           []struct{ Text *string }
	Sources                                            []struct{ URL string }
	RelatedIDs                                         []string
	RecurrenceOfID                                     *string
}

func (t tools) get(ctx context.Context, _ *mcp.CallToolRequest, in GetArgs) (*mcp.CallToolResult, Incident, error) {
	if strings.TrimSpace(in.ID) == "" {
		return nil, Incident{}, invalid("id is empty: give an incident id such as IL-0213")
	}
	d, err := query[struct{ Incident *gqlIncident }](ctx, t.exec, getQuery, map[string]any{"id": in.ID, "lang": in.Lang.graphQL()})
	if err != nil {
		return nil, Incident{}, toolError(err)
	}
	if d.Incident == nil {
		return nil, Incident{}, toolError(incidentlib.Errorf(incidentlib.ENOTFOUND, "no incident %s in the library", in.ID))
	}
	inc := d.Incident.incident()
	return text(markdown(inc)), inc, nil
}

func (g *gqlIncident) incident() Incident {
	texts := func(items []struct{ Text *string }) []string {
		out := []string{}
		for _, it := range items {
			if s := deref(it.Text); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	inc := Incident{ID: g.ID, Title: deref(g.Title), Org: g.Org, OrgSlug: g.OrgSlug, Date: deref(g.Date), DateKind: deref(g.DateKind),
		Summary: deref(g.Summary), Trigger: deref(g.Trigger), Detection: deref(g.Detection), SymptomsText: deref(g.SymptomsText),
		Lessons: deref(g.Lessons), Languages: g.Languages, TextOrigin: g.TextOrigin, Verification: g.Verification,
		ReviewState: g.ReviewState, WithdrawnReason: deref(g.WithdrawnReason), Version: g.Version, UpdatedAt: deref(g.UpdatedAt),
		ImpactScope: deref(g.Impact.Scope), ImpactUsers: deref(g.Impact.Users), ImpactRegion: deref(g.Impact.Region),
		DetectedAfter: deref(g.Timeline.DetectedAfter), ResolvedAfter: deref(g.Timeline.ResolvedAfter),
		Domains: nonNil(g.Domains), Symptoms: nonNil(g.Symptoms), Components: nonNil(g.Components), Contributing: nonNil(g.Contributing),
		RootCause: g.RootCause, Severity: g.Severity, Remediation: texts(g.Remediation), ActionItems: texts(g.ActionItems),
		Sources: []string{}, RelatedIDs: nonNil(g.RelatedIDs), RecurrenceOf: deref(g.RecurrenceOfID)}
	if inc.Languages == nil {
		inc.Languages = []string{}
	}
	for _, s := range g.Sources {
		inc.Sources = append(inc.Sources, s.URL)
	}
	return inc
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// markdown is the incident as a Markdown document for a reader.
func markdown(i Incident) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %s\n\n", i.ID, i.Title)
	fmt.Fprintf(&b, "- Organization: %s (%s)\n", i.Org, i.OrgSlug)
	if i.Date != "" {
		kind := ""
		if i.DateKind != "" {
			kind = " (" + i.DateKind + ")"
		}
		fmt.Fprintf(&b, "- Date: %s%s\n", i.Date, kind)
	}
	if i.Severity != nil {
		fmt.Fprintf(&b, "- Severity: %s\n", i.Severity.Label)
	}
	if i.RootCause != nil {
		fmt.Fprintf(&b, "- Root cause: %s\n", i.RootCause.Label)
	}
	for _, l := range []struct {
		name  string
		terms []Term
	}{{"Domains", i.Domains}, {"Symptoms", i.Symptoms}, {"Components", i.Components}, {"Contributing factors", i.Contributing}} {
		if len(l.terms) > 0 {
			fmt.Fprintf(&b, "- %s: %s\n", l.name, joinEach(l.terms, func(t Term) string { return t.Label }))
		}
	}
	if i.DetectedAfter != "" || i.ResolvedAfter != "" {
		fmt.Fprintf(&b, "- Detected after: %s; resolved after: %s\n", orDash(i.DetectedAfter), orDash(i.ResolvedAfter))
	}
	if impact := strings.Join(nonEmpty(i.ImpactScope, i.ImpactUsers, i.ImpactRegion), "; "); impact != "" {
		fmt.Fprintf(&b, "- Impact: %s\n", impact)
	}
	fmt.Fprintf(&b, "- Review state: %s; verification: %s; version %d\n", i.ReviewState, i.Verification, i.Version)
	if i.WithdrawnReason != "" {
		fmt.Fprintf(&b, "- Withdrawn: %s\n", i.WithdrawnReason)
	}
	for _, s := range []struct{ head, body string }{{"Summary", i.Summary}, {"Trigger", i.Trigger}, {"Detection", i.Detection},
		{"Symptoms", i.SymptomsText}, {"Lessons", i.Lessons}} {
		if s.body != "" {
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", s.head, s.body)
		}
	}
	for _, l := range []struct {
		head  string
		items []string
	}{{"Remediation", i.Remediation}, {"Action items", i.ActionItems}, {"Sources", i.Sources}, {"Related incidents", i.RelatedIDs}} {
		if len(l.items) > 0 {
			fmt.Fprintf(&b, "\n## %s\n\n", l.head)
			for _, it := range l.items {
				fmt.Fprintf(&b, "- %s\n", it)
			}
		}
	}
	if i.RecurrenceOf != "" {
		fmt.Fprintf(&b, "\nA recurrence of %s.\n", i.RecurrenceOf)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
