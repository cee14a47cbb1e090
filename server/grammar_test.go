package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
)

// TestNestedMemberGrammar: through the real handler, an unknown member
// that repeats a known one of its object at any depth (or "history" at
// the top, which would make the export line a history line) is refused by
// upsertIncident and importIncidents with INVALID naming the input field,
// and nothing is written.
func TestNestedMemberGrammar(t *testing.T) {
	s := newWriteServer(t, wrToken)
	s.upsert(t, wrInput("IL-0001"))
	cases := []struct {
		name  string
		set   map[string]any
		field []string
	}{
		{"ReviewWrittenBy", map[string]any{"review": map[string]any{"extra": map[string]any{"written_by": "ceo"}}}, []string{"review", "writtenBy"}},
		{"SourceURL", map[string]any{"sources": []any{
			map[string]any{"url": "https://a.example/1"}, map[string]any{"url": "https://a.example/2"},
			map[string]any{"url": "https://a.example/3", "extra": map[string]any{"url": "javascript:alert(1)"}}}}, []string{"sources", "2", "url"}},
		{"TimelineDetectedAfter", map[string]any{"timeline": map[string]any{"extra": map[string]any{"detected_after": "0s"}}}, []string{"timeline", "detectedAfter"}},
		{"ImpactScope", map[string]any{"impact": map[string]any{"scope": "all", "extra": map[string]any{"scope": "none"}}}, []string{"impact", "scope"}},
		{"RemediationText", map[string]any{"remediation": []any{map[string]any{"text": map[string]any{"en": "x"}, "extra": map[string]any{"text": "y"}}}}, []string{"remediation", "0", "text"}},
		{"OrganizationRole", map[string]any{"organizationRoles": []any{map[string]any{"org": "Cloud", "orgSlug": "cloud", "role": "VENDOR", "extra": map[string]any{"role": "AFFECTED"}}}}, []string{"organizationRoles", "0", "role"}},
		{"TitleEnInCase", map[string]any{"title": map[string]any{"en": "t", "extra": map[string]any{"EN": "x"}}}, []string{"title", "EN"}},
		{"TopHistory", map[string]any{"extra": map[string]any{"history": []any{}}}, []string{"history"}},
	}
	const imp = `mutation($r: [IncidentInput!]!) { importIncidents(records: $r) { created userErrors { field code message } } }`
	before := s.export(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := wrInput("IL-0002")
			for k, v := range c.set {
				in[k] = v
			}
			p := s.upsert(t, in)
			if p.Incident != nil || !hasUserError(p.UserErrors, append([]string{"input"}, c.field...)) {
				t.Fatalf("upsert: no INVALID on %v: %+v", c.field, p.UserErrors)
			}
			var ip struct {
				Created    int
				UserErrors []wrUserError `json:"userErrors"`
			}
			s.mutate(t, imp, map[string]any{"r": []any{wrInput("IL-0003"), in}}, "importIncidents", &ip)
			if ip.Created != 0 || !hasUserError(ip.UserErrors, append([]string{"records", "1"}, c.field...)) {
				t.Fatalf("import: no INVALID on %v: %+v", c.field, ip.UserErrors)
			}
			if s.export(t) != before {
				t.Fatal("a refused write changed the store")
			}
		})
	}
	s.clean(t)
}

func hasUserError(es []wrUserError, field []string) bool {
	for _, e := range es {
		if e.Code == incidentlib.EINVALID && slices.Equal(e.Field, field) && e.Message != "" {
			return true
		}
	}
	return false
}

// TestHistoryGrammarAPI: importIncidents(histories) refuses a history
// that breaks the history grammar with INVALID naming the history, version
// and member, and writes nothing.
func TestHistoryGrammarAPI(t *testing.T) {
	_, ins := historyExport(t)
	s := newWriteServer(t, wrToken)
	for _, c := range []struct {
		name   string
		change func(h *model.HistoryImportInput)
		member string
	}{
		{"EmptyAuthor", func(h *model.HistoryImportInput) { h.History[0].Author = "" }, "author"},
		{"UnknownRole", func(h *model.HistoryImportInput) { r := "root"; h.History[0].Role = &r }, "role"},
		{"TimeNotRFC3339", func(h *model.HistoryImportInput) { h.History[0].At = "yesterday" }, "at"},
		{"LastVersionWithoutRecord", func(h *model.HistoryImportInput) { h.History[len(h.History)-1].Record = nil }, "record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h model.HistoryImportInput
			b, _ := json.Marshal(ins[0])
			_ = json.Unmarshal(b, &h)
			if h.History[len(h.History)-1].Deleted != nil {
				t.Fatal("the first history is a deleted incident's")
			}
			c.change(&h)
			var p struct {
				Created    int
				UserErrors []wrUserError `json:"userErrors"`
			}
			s.mutate(t, histImport, map[string]any{"h": []any{h}}, "importIncidents", &p)
			k := len(h.History) - 1
			if c.member != "record" {
				k = 0
			}
			want := []string{"histories", "0", "history", string(rune('0' + k)), c.member}
			if p.Created != 0 || !hasUserError(p.UserErrors, want) {
				t.Fatalf("no INVALID on %v: %+v", want, p.UserErrors)
			}
			var buf bytes.Buffer
			if err := s.DB.Versions().ExportHistory(context.Background(), &buf); err != nil || strings.Contains(buf.String(), h.ID) {
				t.Fatalf("a refused history import wrote: %v", err)
			}
		})
	}
}
