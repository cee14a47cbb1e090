package incidentlib_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
)

// fullRecord is a valid record with an object at every place IL-JSON has
// one that keeps unknown members.
func fullRecord() *incidentlib.Incident {
	inc := goodRecord()
	inc.Impact = incidentlib.Impact{Scope: "all"}
	inc.Timeline = incidentlib.Timeline{DetectedAfter: "1h"}
	inc.Remediation = []incidentlib.Item{{Text: incidentlib.Text{En: "restart"}}}
	inc.ActionItems = []incidentlib.Item{{Text: incidentlib.Text{En: "alert"}}}
	inc.Sources = []incidentlib.Source{{URL: "https://a.example/1"}, {URL: "https://a.example/2"}, {URL: "https://a.example/3"}}
	inc.Review = incidentlib.Review{WrittenBy: "kim"}
	inc.OrganizationRoles = []incidentlib.OrgRole{{Org: "Cloud", OrgSlug: "cloud", Role: incidentlib.OrganizationRole("VENDOR")}}
	inc.TextOrigin = incidentlib.TextOrigins{Ko: incidentlib.TextOrigin("MACHINE_TRANSLATION")}
	inc.Events = []incidentlib.Event{{Offset: "1h", Kind: incidentlib.EventKind("DETECTED"), Text: incidentlib.Text{En: "paged"}}}
	return inc
}

func hasField(err error, field ...string) bool {
	for _, e := range incidentlib.ErrorList(err) {
		if e.Code == incidentlib.EINVALID && slices.Equal(e.Field, field) {
			return true
		}
	}
	return false
}

// TestMemberGrammar: an unknown member that repeats a known one of its
// object, at any depth, in any case, or "history" at the top, and an
// object inside an unknown member or a doc that names a member twice, are
// EINVALID naming where.
func TestMemberGrammar(t *testing.T) {
	tax := seeds.MustTaxonomy()
	if err := fullRecord().ValidateIncoming(tax, 0, 0); err != nil {
		t.Fatalf("the full record is refused: %v", err)
	}
	x := func(k, v string) incidentlib.Extra { return incidentlib.Extra{k: json.RawMessage(v)} }
	for name, c := range map[string]struct {
		set   func(*incidentlib.Incident)
		field []string
	}{
		"ReviewWrittenBy":      {func(i *incidentlib.Incident) { i.Review.Extra = x("written_by", `"ceo"`) }, []string{"review", "written_by"}},
		"SourceURL":            {func(i *incidentlib.Incident) { i.Sources[2].Extra = x("url", `"javascript:alert(1)"`) }, []string{"sources", "2", "url"}},
		"TimelineDetected":     {func(i *incidentlib.Incident) { i.Timeline.Extra = x("detected_after", `"0s"`) }, []string{"timeline", "detected_after"}},
		"ImpactScope":          {func(i *incidentlib.Incident) { i.Impact.Extra = x("scope", `"none"`) }, []string{"impact", "scope"}},
		"RemediationText":      {func(i *incidentlib.Incident) { i.Remediation[0].Extra = x("text", `{}`) }, []string{"remediation", "0", "text"}},
		"ActionItemTextEn":     {func(i *incidentlib.Incident) { i.ActionItems[0].Text.Extra = x("en", `"x"`) }, []string{"action_items", "0", "text", "en"}},
		"OrgRoleRole":          {func(i *incidentlib.Incident) { i.OrganizationRoles[0].Extra = x("role", `"AFFECTED"`) }, []string{"organization_roles", "0", "role"}},
		"TextOriginEn":         {func(i *incidentlib.Incident) { i.TextOrigin.Extra = x("en", `"ORIGINAL"`) }, []string{"text_origin", "en"}},
		"EventKind":            {func(i *incidentlib.Incident) { i.Events[0].Extra = x("kind", `"START"`) }, []string{"events", "0", "kind"}},
		"EventTextKo":          {func(i *incidentlib.Incident) { i.Events[0].Text.Extra = x("ko", `"x"`) }, []string{"events", "0", "text", "ko"}},
		"TitleEn":              {func(i *incidentlib.Incident) { i.Title.Extra = x("en", `"x"`) }, []string{"title", "en"}},
		"TopOrg":               {func(i *incidentlib.Incident) { i.Extra = x("org", `"x"`) }, []string{"org"}},
		"CaseOnly":             {func(i *incidentlib.Incident) { i.Review.Extra = x("Written_By", `"ceo"`) }, []string{"review", "Written_By"}},
		"TopHistory":           {func(i *incidentlib.Incident) { i.Extra = x("history", `[]`) }, []string{"history"}},
		"TopSeq":               {func(i *incidentlib.Incident) { i.Extra = x("seq", `1`) }, []string{"seq"}},
		"TopDeleted":           {func(i *incidentlib.Incident) { i.Extra = x("Deleted", `true`) }, []string{"Deleted"}},
		"TopEntry":             {func(i *incidentlib.Incident) { i.Extra = x("entry", `{}`) }, []string{"entry"}},
		"DuplicateInExtra":     {func(i *incidentlib.Incident) { i.Review.Extra = x("notes", `{"a":{"b":1,"b":2}}`) }, []string{"review", "notes", "a", "b"}},
		"DuplicateInExtraList": {func(i *incidentlib.Incident) { i.Sources[1].Extra = x("m", `[0,{"k":1,"k":2}]`) }, []string{"sources", "1", "m", "1", "k"}},
		"DuplicateInDoc": {func(i *incidentlib.Incident) {
			i.Docs = []json.RawMessage{json.RawMessage(`{"u":1}`), json.RawMessage(`{"u":1,"u":2}`)}
		}, []string{"docs", "1", "u"}},
	} {
		t.Run(name, func(t *testing.T) {
			inc := fullRecord()
			c.set(inc)
			for _, err := range []error{inc.Validate(), inc.ValidateIncoming(tax, 0, 0)} {
				if !hasField(err, c.field...) {
					t.Fatalf("no EINVALID on %v: %v", c.field, err)
				}
			}
		})
	}
	t.Run("NestedHistoryIsFree", func(t *testing.T) {
		inc := fullRecord()
		inc.Review.Extra = x("history", `[1]`)
		if err := inc.ValidateIncoming(tax, 0, 0); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEveryUnknownMemberPlaceIsChecked enumerates, from the Go types,
// every object of a record that keeps unknown members: each has its
// KnownMembers, and a known member's name put in its Extra is refused
// there. A type added to the record cannot be forgotten.
func TestEveryUnknownMemberPlaceIsChecked(t *testing.T) {
	extraType := reflect.TypeFor[incidentlib.Extra]()
	var places int
	// fill sets, below v, one element of each list and, in each Extra, a
	// member named after one known member of its object; it returns the
	// fields the validation must name.
	var fill func(v reflect.Value, path []string) [][]string
	fill = func(v reflect.Value, path []string) [][]string {
		var want [][]string
		switch v.Kind() {
		case reflect.Slice:
			if v.Type().Elem().Kind() != reflect.Struct {
				return nil
			}
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			return fill(v.Index(0), append(slices.Clone(path), "0"))
		case reflect.Struct:
			known := incidentlib.KnownMembers(v.Addr().Interface())
			for f := range v.Type().Fields() {
				if !f.IsExported() {
					continue
				}
				if f.Type == extraType {
					if known == nil {
						t.Fatalf("%s keeps unknown members but has no KnownMembers", v.Type())
					}
					places++
					name := slices.Sorted(func(yield func(string) bool) {
						for k := range known {
							if !yield(k) {
								return
							}
						}
					})[0]
					v.FieldByIndex(f.Index).Set(reflect.ValueOf(incidentlib.Extra{name: json.RawMessage(`null`)}))
					want = append(want, append(slices.Clone(path), name))
					continue
				}
				if k := f.Type.Kind(); k == reflect.Struct || k == reflect.Slice {
					jn, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					if jn == "" || jn == "-" {
						jn = strings.ToLower(f.Name)
					}
					if known != nil && !known[jn] {
						t.Fatalf("%s.%s is written as %q, which KnownMembers does not list", v.Type(), f.Name, jn)
					}
					want = append(want, fill(v.FieldByIndex(f.Index), append(slices.Clone(path), jn))...)
				}
			}
		}
		return want
	}
	inc := &incidentlib.Incident{}
	want := fill(reflect.ValueOf(inc).Elem(), nil)
	if places < 10 {
		t.Fatalf("only %d places with unknown members found", places)
	}
	err := inc.Validate()
	for _, f := range want {
		if !hasField(err, f...) {
			t.Errorf("the reserved member at %v is not refused", f)
		}
	}
}

// TestIsHistoryLine: the importer's test of a history line, and a record
// cannot pass it.
func TestIsHistoryLine(t *testing.T) {
	if !incidentlib.IsHistoryLine([]byte(`{"id":"IL-0001","history":[]}`)) || incidentlib.IsHistoryLine([]byte(`{"id":"IL-0001"}`)) {
		t.Fatal("IsHistoryLine")
	}
	inc := fullRecord()
	inc.Extra = incidentlib.Extra{"history": json.RawMessage(`[]`)}
	b, _ := json.Marshal(inc)
	if incidentlib.IsHistoryLine(b) && inc.Validate() == nil {
		t.Fatal("a valid record reads as a history line")
	}
}
