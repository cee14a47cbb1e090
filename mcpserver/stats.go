package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StatsArgs are library_stats' arguments.
type StatsArgs struct {
	Filter Filter `json:"filter,omitempty"`
	Lang   Lang   `json:"lang,omitempty"`
}

// TermCount is how many incidents carry a term.
type TermCount struct {
	Slug  string `json:"slug"`
	Label string `json:"label"`
	Count int    `json:"count"`
}

// KindCounts are the most common terms of a taxonomy kind.
type KindCounts struct {
	Kind  string      `json:"kind"`
	Terms []TermCount `json:"terms" jsonschema:"at most 10, most common first"`
}

// YearCount is how many incidents a year holds.
type YearCount struct {
	Year  int `json:"year"`
	Count int `json:"count"`
}

// OrgCount is how many incidents an organization had.
type OrgCount struct {
	Slug  string `json:"slug"`
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Durations are one timeline duration's figures, in seconds.
type Durations struct {
	Count      int  `json:"count" jsonschema:"how many incidents state it"`
	P50Seconds *int `json:"p50Seconds,omitempty"`
	P90Seconds *int `json:"p90Seconds,omitempty"`
	MaxSeconds *int `json:"maxSeconds,omitempty"`
}

// Stats is library_stats' structured content.
type Stats struct {
	Count            int          `json:"count" jsonschema:"how many incidents match the filter"`
	Years            []YearCount  `json:"years" jsonschema:"per year, oldest first (undated incidents left out)"`
	Terms            []KindCounts `json:"terms"`
	TopOrganizations []OrgCount   `json:"topOrganizations" jsonschema:"at most 10, most incidents first"`
	DetectedAfter    Durations    `json:"detectedAfter"`
	ResolvedAfter    Durations    `json:"resolvedAfter"`
}

// maxTermsPerKind bounds each kind's list in Stats.
const maxTermsPerKind = 10

const statsQuery = `query ($filter: IncidentFilter, $lang: Lang) {
  stats(filter: $filter) {
    count
    topOrganizations(first: 10) { organization { slug name } count }
    durations { detectedAfter { ...D } resolvedAfter { ...D } }
  }
  incidents(filter: $filter, first: 1) { years { year count } facets { kind counts { term { slug label(lang: $lang) } count } } }
}
fragment D on DurationStats { count p50Seconds p90Seconds maxSeconds }`

func (t tools) stats(ctx context.Context, _ *mcp.CallToolRequest, in StatsArgs) (*mcp.CallToolResult, Stats, error) {
	d, err := query[struct {
		Stats struct {
			Count            int
			TopOrganizations []struct {
				Organization struct{ Slug, Name string }
				Count        int
			}
			Durations struct{ DetectedAfter, ResolvedAfter Durations }
		}
		Incidents struct {
			Years  []YearCount
			Facets []struct {
				Kind   string
				Counts []struct {
					Term  struct{ Slug, Label string }
					Count int
				}
			}
		}
	}](ctx, t.exec, statsQuery, map[string]any{"filter": filterVar(in.Filter), "lang": in.Lang.graphQL()})
	if err != nil {
		return nil, Stats{}, toolError(err)
	}
	out := Stats{Count: d.Stats.Count, Years: nonNil(d.Incidents.Years), Terms: []KindCounts{}, TopOrganizations: []OrgCount{},
		DetectedAfter: d.Stats.Durations.DetectedAfter, ResolvedAfter: d.Stats.Durations.ResolvedAfter}
	for _, o := range d.Stats.TopOrganizations {
		out.TopOrganizations = append(out.TopOrganizations, OrgCount{Slug: o.Organization.Slug, Name: o.Organization.Name, Count: o.Count})
	}
	for _, f := range d.Incidents.Facets {
		kc := KindCounts{Kind: f.Kind, Terms: []TermCount{}}
		for _, c := range f.Counts[:min(len(f.Counts), maxTermsPerKind)] {
			kc.Terms = append(kc.Terms, TermCount{Slug: c.Term.Slug, Label: c.Term.Label, Count: c.Count})
		}
		out.Terms = append(out.Terms, kc)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d incidents.\n", out.Count)
	if len(out.Years) > 0 {
		fmt.Fprintf(&b, "\nPer year: %s\n", joinEach(out.Years, func(y YearCount) string { return fmt.Sprintf("%d: %d", y.Year, y.Count) }))
	}
	for _, kc := range out.Terms {
		fmt.Fprintf(&b, "\n%s: %s\n", kc.Kind, joinEach(kc.Terms, func(tc TermCount) string { return fmt.Sprintf("%s %d", tc.Label, tc.Count) }))
	}
	if len(out.TopOrganizations) > 0 {
		fmt.Fprintf(&b, "\nOrganizations with the most incidents: %s\n", joinEach(out.TopOrganizations, func(o OrgCount) string { return fmt.Sprintf("%s %d", o.Name, o.Count) }))
	}
	for _, dd := range []struct {
		name string
		d    Durations
	}{{"Detected after", out.DetectedAfter}, {"Resolved after", out.ResolvedAfter}} {
		if dd.d.Count > 0 && dd.d.P50Seconds != nil && dd.d.P90Seconds != nil {
			fmt.Fprintf(&b, "\n%s (%d incidents): median %ds, 90th percentile %ds\n", dd.name, dd.d.Count, *dd.d.P50Seconds, *dd.d.P90Seconds)
		}
	}
	return text(b.String()), out, nil
}

// joinEach joins what each item says, with commas.
func joinEach[T any](items []T, say func(T) string) string {
	parts := make([]string, len(items))
	for k, it := range items {
		parts[k] = say(it)
	}
	return strings.Join(parts, ", ")
}
