package incidentlib_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

func TestProvenanceValidation(t *testing.T) {
	base := `"id":"IL-0901","org":"Example","org_slug":"example","title":{"en":"x"}`
	for name, c := range map[string]struct{ members, field string }{
		"Verification":       {`"verification":"RUMOUR"`, "verification"},
		"RoleAffected":       {`"organization_roles":[{"org":"V","org_slug":"v","role":"AFFECTED"}]`, "organization_roles.0.role"},
		"RoleUnknown":        {`"organization_roles":[{"org":"V","org_slug":"v","role":"OWNER"}]`, "organization_roles.0.role"},
		"RoleSlug":           {`"organization_roles":[{"org":"V","org_slug":"V V","role":"VENDOR"}]`, "organization_roles.0.org_slug"},
		"RoleOrgMissing":     {`"organization_roles":[{"org":"","org_slug":"v","role":"VENDOR"}]`, "organization_roles.0.org"},
		"RoleTwice":          {`"organization_roles":[{"org":"V","org_slug":"v","role":"VENDOR"},{"org":"V","org_slug":"v","role":"VENDOR"}]`, "organization_roles.1"},
		"RoleNameOfAffected": {`"organization_roles":[{"org":"Other","org_slug":"example","role":"REPORTER"}]`, "organization_roles.0.org"},
		"TextOrigin":         {`"text_origin":{"ko":"GUESSED"}`, "text_origin.ko"},
	} {
		t.Run(name, func(t *testing.T) {
			var inc incidentlib.Incident
			if err := json.Unmarshal([]byte("{"+base+","+c.members+"}"), &inc); err != nil {
				t.Fatal(err)
			}
			es := incidentlib.ErrorList(inc.Validate())
			if len(es) != 1 || es[0].Code != incidentlib.EINVALID || strings.Join(es[0].Field, ".") != c.field {
				t.Fatalf("%+v, want one INVALID at %s", es, c.field)
			}
		})
	}
	var ok incidentlib.Incident
	if err := json.Unmarshal([]byte("{"+base+`,"verification":"UNKNOWN","organization_roles":[{"org":"V","org_slug":"v","role":"VENDOR"},{"org":"V","org_slug":"v","role":"REPORTER"}],"text_origin":{"en":"ORIGINAL","ko":"HUMAN_TRANSLATION"}}`), &ok); err != nil {
		t.Fatal(err)
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestProvenanceCodec(t *testing.T) {
	// Known members of the new objects are read, unknown ones kept, and
	// the canonical form is stable.
	raw := `{"id":"IL-0901","org":"Example","org_slug":"example","title":{"en":"x"},"text_origin":{"ja":"MACHINE_TRANSLATION","ko":"ORIGINAL"},"organization_roles":[{"role":"VENDOR","x":1,"org":"V","org_slug":"v"}],"verification":"PRIMARY_SOURCE"}`
	var inc incidentlib.Incident
	if err := json.Unmarshal([]byte(raw), &inc); err != nil {
		t.Fatal(err)
	}
	if len(inc.Extra) != 0 || inc.Verification != incidentlib.VerificationPrimarySource || inc.TextOrigin.Ko != incidentlib.TextOriginal ||
		string(inc.TextOrigin.Extra["ja"]) != `"MACHINE_TRANSLATION"` || string(inc.OrganizationRoles[0].Extra["x"]) != "1" {
		t.Fatalf("%+v", inc)
	}
	a, _ := json.Marshal(&inc)
	var again incidentlib.Incident
	if err := json.Unmarshal(a, &again); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(&again)
	if string(a) != string(b) {
		t.Fatalf("not stable:\n%s\n%s", a, b)
	}
	if !strings.Contains(string(a), `"url":null,"verification":"PRIMARY_SOURCE","organization_roles":[{"org":"V","org_slug":"v","role":"VENDOR","x":1}],"text_origin":{"ko":"ORIGINAL","ja":"MACHINE_TRANSLATION"}}`) {
		t.Fatalf("canonical form: %s", a)
	}
	// A record without them is written back without them.
	old := `{"id":"IL-0902","org":"Example","org_slug":"example","title":{"en":"x"}}`
	var o incidentlib.Incident
	json.Unmarshal([]byte(old), &o)
	c, _ := json.Marshal(&o)
	for _, m := range []string{"verification", "organization_roles", "text_origin"} {
		if strings.Contains(string(c), m) {
			t.Fatalf("%s written for a record without it: %s", m, c)
		}
	}
	if o.Verification.OrUnknown() != incidentlib.VerificationUnknown || o.TextOriginIn(incidentlib.LangKo) != incidentlib.TextOriginal {
		t.Fatal("an old record must read UNKNOWN/ORIGINAL")
	}
	for _, m := range []string{"verification", "organization_roles", "text_origin"} {
		if !incidentlib.KnownMembers(incidentlib.Incident{})[m] {
			t.Errorf("KnownMembers lacks %s", m)
		}
	}
}

func TestTextOriginFallsBackWithTheText(t *testing.T) {
	enOnly := incidentlib.Incident{Title: incidentlib.Text{En: "x"}, TextOrigin: incidentlib.TextOrigins{En: incidentlib.TextMachineTranslation}}
	if got := enOnly.TextOriginIn(incidentlib.LangKo); got != incidentlib.TextMachineTranslation {
		t.Errorf("Korean of an English-only record: %s", got)
	}
	both := incidentlib.Incident{Title: incidentlib.Text{En: "x", Ko: "y"}, TextOrigin: incidentlib.TextOrigins{En: incidentlib.TextMachineTranslation}}
	if got := both.TextOriginIn(incidentlib.LangKo); got != incidentlib.TextOriginal {
		t.Errorf("Korean of a bilingual record: %s", got)
	}
	if got := both.TextOriginIn(incidentlib.LangEn); got != incidentlib.TextMachineTranslation {
		t.Errorf("English of a bilingual record: %s", got)
	}
}
