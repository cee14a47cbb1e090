package incidentlib_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
)

func goodRecord() *incidentlib.Incident {
	return &incidentlib.Incident{ID: "IL-0001", Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: "The database fell over"},
		Summary: incidentlib.Text{En: "First line.\n\tSecond line.\r\nThird."}, Date: "2026-02-28",
		Sources: []incidentlib.Source{{URL: "https://acme.example/postmortem"}}}
}

func fieldsOf(err error) map[string]bool {
	out := map[string]bool{}
	for _, e := range incidentlib.ErrorList(err) {
		out[strings.Join(e.Field, ".")] = true
	}
	return out
}

// Control characters and bidirectional controls are refused in every text
// field, with an error naming the field; tab and line breaks only where
// text is multi-line.
func TestValidateRefusesControlCharacters(t *testing.T) {
	tax := seeds.MustTaxonomy()
	if err := goodRecord().ValidateIncoming(tax, 0, 0); err != nil {
		t.Fatalf("a good record with tabs and newlines in its summary was refused: %v", err)
	}
	for name, c := range map[string]struct {
		set   func(*incidentlib.Incident)
		field string
	}{
		"NULInTitle":      {func(i *incidentlib.Incident) { i.Title.En = "a\x00b" }, "title.en"},
		"ESCInTitle":      {func(i *incidentlib.Incident) { i.Title.Ko = "\x1b[31mred" }, "title.ko"},
		"RLOInTitle":      {func(i *incidentlib.Incident) { i.Title.En = "invoice\u202Etxt.exe" }, "title.en"},
		"IsolateInOrg":    {func(i *incidentlib.Incident) { i.Org = "Acme\u2066" }, "org"},
		"NewlineInTitle":  {func(i *incidentlib.Incident) { i.Title.En = "two\nlines" }, "title.en"},
		"TabInOrg":        {func(i *incidentlib.Incident) { i.Org = "Ac\tme" }, "org"},
		"DELInSummary":    {func(i *incidentlib.Incident) { i.Summary.En = "x\x7fy" }, "summary.en"},
		"C1InLessons":     {func(i *incidentlib.Incident) { i.Lessons.En = "x\u0085y" }, "lessons.en"},
		"LoneCRInSummary": {func(i *incidentlib.Incident) { i.Summary.En = "over\rwritten" }, "summary.en"},
		"BellInActionItem": {func(i *incidentlib.Incident) {
			i.ActionItems = []incidentlib.Item{{Text: incidentlib.Text{En: "ring\a"}}}
		}, "action_items.0.text.en"},
		"NULInOtherLanguage": {func(i *incidentlib.Incident) { i.Title.Extra = incidentlib.Extra{"ja": json.RawMessage(`"a\u0000"`)} }, "title.ja"},
		"ESCInImpact":        {func(i *incidentlib.Incident) { i.Impact.Scope = "\x1b]0;x\a" }, "impact.scope"},
		"NULInSourceKind":    {func(i *incidentlib.Incident) { i.Sources[0].Kind = "post\x00" }, "sources.0.kind"},
		"ESCInWrittenBy":     {func(i *incidentlib.Incident) { i.Review.WrittenBy = "lee\x1b" }, "review.written_by"},
	} {
		t.Run(name, func(t *testing.T) {
			inc := goodRecord()
			c.set(inc)
			err := inc.ValidateIncoming(tax, 0, 0)
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID || !fieldsOf(err)[c.field] {
				t.Fatalf("want EINVALID naming %s, got %v", c.field, err)
			}
			if !strings.Contains(incidentlib.ErrorMessage(err), c.field) {
				t.Fatalf("the message does not name the field: %s", incidentlib.ErrorMessage(err))
			}
			// Text rules are refused on writes, but a peer's record that
			// breaks only them is taken (stored before the rule).
			if r := incidentlib.SkipRule(err); r != "" {
				t.Fatalf("SkipRule = %q for a record that breaks only the text rule", r)
			}
			if err := inc.Validate(); !fieldsOf(err)[c.field] {
				t.Fatalf("Validate lets it through: %v", err)
			}
		})
	}
}

// The hostile records of the issue are refused, each for the rule a peer
// skips it for.
func TestValidateIncomingSkipRules(t *testing.T) {
	tax := seeds.MustTaxonomy()
	for name, c := range map[string]struct {
		set  func(*incidentlib.Incident)
		rule incidentlib.Rule
	}{
		"JavascriptURL":  {func(i *incidentlib.Incident) { i.Sources[0].URL = "javascript:alert(1)" }, incidentlib.RuleURLScheme},
		"DataURL":        {func(i *incidentlib.Incident) { i.URL = "data:text/html,<script>" }, incidentlib.RuleURLScheme},
		"LongTitle":      {func(i *incidentlib.Incident) { i.Title.En = strings.Repeat("x", 5000) }, incidentlib.RuleStructure},
		"February30":     {func(i *incidentlib.Incident) { i.Date = "2026-02-30" }, incidentlib.RuleStructure},
		"SlugTraversal":  {func(i *incidentlib.Incident) { i.OrgSlug = "../../x" }, incidentlib.RuleStructure},
		"SelfRelated":    {func(i *incidentlib.Incident) { i.Related = []string{i.ID} }, incidentlib.RuleStructure},
		"SelfRecurrence": {func(i *incidentlib.Incident) { i.RecurrenceOf = i.ID }, incidentlib.RuleStructure},
		"UnknownTerm":    {func(i *incidentlib.Incident) { i.Domain = []string{"no-such-domain"} }, incidentlib.RuleStructure},
		"OneMegabyte": {func(i *incidentlib.Incident) {
			i.Extra = incidentlib.Extra{"blob": json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)}
		}, incidentlib.RuleSize},
	} {
		t.Run(name, func(t *testing.T) {
			inc := goodRecord()
			c.set(inc)
			err := inc.ValidateIncoming(tax, 0, 0)
			if got := incidentlib.SkipRule(err); got != c.rule {
				t.Fatalf("SkipRule = %q, want %q (%v)", got, c.rule, err)
			}
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("code %s", incidentlib.ErrorCode(err))
			}
		})
	}
	t.Run("SizeAsReceived", func(t *testing.T) {
		inc := goodRecord()
		if err := inc.ValidateIncoming(tax, 1<<10, 2<<10); incidentlib.SkipRule(err) != incidentlib.RuleSize {
			t.Fatalf("a record received as 2KiB passed a 1KiB limit: %v", err)
		}
		if err := inc.ValidateIncoming(tax, 1<<10, 0); err != nil {
			t.Fatalf("a small record measured here was refused: %v", err)
		}
	})
}

// FuzzValidateRecord decodes arbitrary bytes as IL-JSON and validates the
// record: never a panic, every problem EINVALID, and a record that
// validates re-encodes to canonical IL-JSON that reads back and validates
// again, byte for byte the same.
func FuzzValidateRecord(f *testing.F) {
	tax := seeds.MustTaxonomy()
	good, _ := json.Marshal(goodRecord())
	f.Add(good)
	f.Add([]byte(`{"id":"IL-0002","org":"A","org_slug":"a","title":{"en":"a\u202eb"},"sources":[{"url":"javascript:x"}]}`))
	f.Add([]byte(`{"id":"IL-0003","org":"A","org_slug":"../../x","date":"2026-02-30","title":{"en":"t","ja":"\u0000"},"related":["IL-0003"]}`))
	f.Add([]byte(`{"id":"IL-0004","org":"A","org_slug":"a","title":{"en":"t"},"summary":{"en":"a\r\nb\tc"},"review":{"written_by":null},"x":{"y":[1,null]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := importer.ReadRecords("fuzz", data)
		if err != nil {
			return
		}
		for _, r := range recs {
			err := r.Incident.ValidateIncoming(tax, 0, len(data))
			if err != nil {
				if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
					t.Fatalf("a problem must be EINVALID: %v", err)
				}
				for _, e := range incidentlib.ErrorList(err) {
					if e.Message == "" {
						t.Fatalf("an error without a message: %+v", e)
					}
				}
				continue
			}
			a, err := json.Marshal(r.Incident)
			if err != nil {
				t.Fatalf("a valid record does not encode: %v", err)
			}
			again, err := importer.ReadRecords("again", a)
			if err != nil || len(again) != 1 {
				t.Fatalf("a valid record's IL-JSON does not read back: %v\n%s", err, a)
			}
			if err := again[0].Incident.ValidateIncoming(tax, 0, 0); err != nil {
				t.Fatalf("a valid record is invalid after a round trip: %v\n%s", err, a)
			}
			if b, _ := json.Marshal(again[0].Incident); !bytes.Equal(a, b) {
				t.Fatalf("the round trip changed the record:\n%s\n%s", a, b)
			}
		}
	})
}

// review.written_by null stays null: IL-JSON reads and writes it as null.
func TestWrittenByNullRoundTrip(t *testing.T) {
	in := `{"id":"IL-0001","org":"A","org_slug":"a","title":{"en":"t"},"review":{"written_by":null,"reviewed_at":null,"reviewed_by":null}}`
	recs, err := importer.ReadRecords("f", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(recs[0].Incident)
	if !bytes.Contains(out, []byte(`"review":{"written_by":null,"reviewed_at":null,"reviewed_by":null}`)) {
		t.Fatalf("written_by null did not stay null: %s", out)
	}
}
