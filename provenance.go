package incidentlib

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib/iljson"
)

// Structured provenance (issue #22): how far a record can be trusted
// (verification), which organizations it names besides the one it
// happened to (organization_roles), and where each language's text came
// from (text_origin). All three are optional in IL-JSON; a record without
// them reads as UNKNOWN, no other organizations, and ORIGINAL in every
// language, and is written back without them.

// Verification says what kind of account a record is made from.
type Verification string

// Verifications.
const (
	// VerificationPrimarySource: the organization's own postmortem.
	VerificationPrimarySource Verification = "PRIMARY_SOURCE"
	// VerificationSecondaryReport: press or a third party.
	VerificationSecondaryReport Verification = "SECONDARY_REPORT"
	// VerificationFirstPersonAccount: an unverified personal account.
	VerificationFirstPersonAccount Verification = "FIRST_PERSON_ACCOUNT"
	// VerificationUnknown: not said; also what a record without the field reads as.
	VerificationUnknown Verification = "UNKNOWN"
)

// Verifications lists every verification value.
var Verifications = []Verification{VerificationPrimarySource, VerificationSecondaryReport,
	VerificationFirstPersonAccount, VerificationUnknown}

// IsValid reports whether v is one of Verifications.
func (v Verification) IsValid() bool {
	switch v {
	case VerificationPrimarySource, VerificationSecondaryReport, VerificationFirstPersonAccount, VerificationUnknown:
		return true
	}
	return false
}

// OrUnknown is v, or UNKNOWN when v is empty (the field is absent).
func (v Verification) OrUnknown() Verification {
	if v == "" {
		return VerificationUnknown
	}
	return v
}

// UnmarshalGQL reads the GraphQL enum (the graph package binds the enum
// to this type; no GraphQL package is imported here).
func (v *Verification) UnmarshalGQL(x any) error {
	return UnmarshalEnum(v, x, "Verification", Verification.IsValid)
}

// MarshalGQL writes the GraphQL enum.
func (v Verification) MarshalGQL(w io.Writer) { WriteEnum(w, string(v)) }

// OrganizationRole is the part an organization played in an incident.
type OrganizationRole string

// Organization roles.
const (
	// RoleAffected: the organization the incident happened to, the
	// record's org and org_slug. There is one per incident.
	RoleAffected OrganizationRole = "AFFECTED"
	// RoleVendor: a supplier of the software or service that failed.
	RoleVendor OrganizationRole = "VENDOR"
	// RoleReporter: who published the account, when it is not the
	// affected organization.
	RoleReporter OrganizationRole = "REPORTER"
)

// IsValid reports whether r is a known role.
func (r OrganizationRole) IsValid() bool {
	return r == RoleAffected || r == RoleVendor || r == RoleReporter
}

// UnmarshalGQL reads the GraphQL enum.
func (r *OrganizationRole) UnmarshalGQL(x any) error {
	return UnmarshalEnum(r, x, "OrganizationRole", OrganizationRole.IsValid)
}

// MarshalGQL writes the GraphQL enum.
func (r OrganizationRole) MarshalGQL(w io.Writer) { WriteEnum(w, string(r)) }

// TextOrigin says where a language's text of a record came from.
type TextOrigin string

// Text origins.
const (
	// TextOriginal: written in this language (by the source, or by the
	// library from the source in this language). What a language without
	// an entry reads as.
	TextOriginal TextOrigin = "ORIGINAL"
	// TextHumanTranslation: translated by a person.
	TextHumanTranslation TextOrigin = "HUMAN_TRANSLATION"
	// TextMachineTranslation: translated by a program (a language model
	// included).
	TextMachineTranslation TextOrigin = "MACHINE_TRANSLATION"
)

// IsValid reports whether o is a known origin.
func (o TextOrigin) IsValid() bool {
	return o == TextOriginal || o == TextHumanTranslation || o == TextMachineTranslation
}

// UnmarshalGQL reads the GraphQL enum.
func (o *TextOrigin) UnmarshalGQL(x any) error {
	return UnmarshalEnum(o, x, "TextOrigin", TextOrigin.IsValid)
}

// MarshalGQL writes the GraphQL enum.
func (o TextOrigin) MarshalGQL(w io.Writer) { WriteEnum(w, string(o)) }

// UnmarshalEnum reads a GraphQL enum value x into dst for a string enum
// type named name, whose values valid accepts; dst is emptied on error.
// The enums of the root package and of graph/model share it.
func UnmarshalEnum[T ~string](dst *T, x any, name string, valid func(T) bool) error {
	*dst = ""
	s, ok := x.(string)
	if !ok {
		return Errorf(EINVALID, "%s must be a string", name)
	}
	if !valid(T(s)) {
		return Errorf(EINVALID, "%s is not a valid %s", s, name)
	}
	*dst = T(s)
	return nil
}

// WriteEnum writes a GraphQL enum value (a quoted string).
func WriteEnum(w io.Writer, s string) { _, _ = io.WriteString(w, strconv.Quote(s)) }

// OrgRole is one entry of a record's organization_roles: an organization
// other than the affected one, and its role. IL-JSON:
// {"org": "Veltrix", "org_slug": "veltrix", "role": "VENDOR"}.
type OrgRole struct {
	Org     string           `json:"org"`
	OrgSlug string           `json:"org_slug"`
	Role    OrganizationRole `json:"role"`
	Extra   Extra            `json:"-"`
}

type orgRoleJSON struct {
	Org     string           `json:"org"`
	OrgSlug string           `json:"org_slug"`
	Role    OrganizationRole `json:"role"`
}

var orgRoleKnown = iljson.KnownFields(orgRoleJSON{})

// MarshalJSON writes the entry.
func (r OrgRole) MarshalJSON() ([]byte, error) {
	return iljson.MarshalWithExtra(orgRoleJSON{r.Org, r.OrgSlug, r.Role}, r.Extra)
}

// UnmarshalJSON reads an entry, keeping unknown fields.
func (r *OrgRole) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, r, orgRoleKnown, iljson.NullIsError, func(w orgRoleJSON, extra Extra) OrgRole {
		return OrgRole{Org: w.Org, OrgSlug: w.OrgSlug, Role: w.Role, Extra: extra}
	})
}

// TextOrigins is a record's text_origin: per language, where its text came
// from; a language without an entry is ORIGINAL. Entries for languages
// other than en and ko are kept in Extra. IL-JSON: {"ko": "MACHINE_TRANSLATION"}.
type TextOrigins struct {
	En    TextOrigin `json:"en,omitempty"`
	Ko    TextOrigin `json:"ko,omitempty"`
	Extra Extra      `json:"-"`
}

type textOriginsJSON struct {
	En TextOrigin `json:"en,omitempty"`
	Ko TextOrigin `json:"ko,omitempty"`
}

// MarshalJSON writes the entries present.
func (t TextOrigins) MarshalJSON() ([]byte, error) {
	return iljson.MarshalWithExtra(textOriginsJSON{t.En, t.Ko}, t.Extra)
}

// UnmarshalJSON reads text_origin; null is no entries.
//
//nolint:dupl // Text and TextOrigins: two per-language objects of different value types; the shared part is iljson.Unmarshal
func (t *TextOrigins) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, t, textKnown, iljson.NullIsZero, func(w textOriginsJSON, extra Extra) TextOrigins {
		return TextOrigins{En: w.En, Ko: w.Ko, Extra: extra}
	})
}

// IsZero reports whether there are no entries at all.
func (t TextOrigins) IsZero() bool { return t.En == "" && t.Ko == "" && len(t.Extra) == 0 }

// In returns the origin of lang's text: its entry, else ORIGINAL.
func (t TextOrigins) In(lang Lang) TextOrigin {
	o := t.En
	if lang == LangKo {
		o = t.Ko
	}
	if o == "" {
		return TextOriginal
	}
	return o
}

// TextOriginIn returns the origin of the text the record serves in lang.
// Text falls back to the other language when lang has none (Text.In), and
// so does its origin: a record whose title is only in English answers
// for Korean with the English text's origin.
func (i *Incident) TextOriginIn(lang Lang) TextOrigin {
	if lang == LangKo && i.Title.Ko == "" && i.Title.En != "" {
		lang = LangEn
	} else if lang != LangKo && i.Title.En == "" && i.Title.Ko != "" {
		lang = LangKo
	}
	return i.TextOrigin.In(lang)
}

// OrganizationOf is one organization an incident names, with its role.
type OrganizationOf struct {
	Slug string
	Name string
	Role OrganizationRole
}

// Organizations lists the organizations the record names: the affected
// one (org, org_slug) first, then organization_roles in their order.
func (i *Incident) Organizations() []OrganizationOf {
	out := make([]OrganizationOf, 0, 1+len(i.OrganizationRoles))
	out = append(out, OrganizationOf{Slug: i.OrgSlug, Name: i.Org, Role: RoleAffected})
	for _, r := range i.OrganizationRoles {
		out = append(out, OrganizationOf{Slug: r.OrgSlug, Name: r.Org, Role: r.Role})
	}
	return out
}

// validateProvenance checks verification, organization_roles and
// text_origin, one error per problem, each naming its field path.
func (i *Incident) validateProvenance() Errors {
	var es Errors
	bad := func(field string, format string, args ...any) {
		es = append(es, FieldErrorf(EINVALID, strings.Split(field, "."), format, args...))
	}
	if i.Verification != "" && !i.Verification.IsValid() {
		bad("verification", "verification %q is not one of PRIMARY_SOURCE, SECONDARY_REPORT, FIRST_PERSON_ACCOUNT, UNKNOWN", i.Verification)
	}
	if len(i.OrganizationRoles) > MaxListLen {
		bad("organization_roles", "organization_roles has %d entries, more than the limit of %d", len(i.OrganizationRoles), MaxListLen)
	}
	type pair struct {
		slug string
		role OrganizationRole
	}
	seen := map[pair]bool{}
	names := map[string]string{i.OrgSlug: i.Org}
	for n, r := range i.OrganizationRoles {
		p := fmt.Sprintf("organization_roles.%d", n)
		switch {
		case strings.TrimSpace(r.Org) == "":
			bad(p+".org", "organization_roles[%d].org is required", n)
		case utf8.RuneCountInString(r.Org) > MaxNameLen:
			bad(p+".org", "organization_roles[%d].org is longer than %d characters", n, MaxNameLen)
		}
		if !ValidSlug(r.OrgSlug) {
			bad(p+".org_slug", "organization_roles[%d].org_slug %q is not a slug (lowercase letters and digits in hyphen-separated words)", n, r.OrgSlug)
		}
		switch {
		case r.Role == RoleAffected:
			bad(p+".role", "organization_roles[%d].role AFFECTED: the affected organization is the record's org and org_slug; organization_roles names the others (VENDOR, REPORTER)", n)
		case !r.Role.IsValid():
			bad(p+".role", "organization_roles[%d].role %q is not one of VENDOR, REPORTER", n, r.Role)
		}
		if seen[pair{r.OrgSlug, r.Role}] {
			bad(p, "organization_roles[%d] names %q as %s twice", n, r.OrgSlug, r.Role)
		}
		seen[pair{r.OrgSlug, r.Role}] = true
		if name, ok := names[r.OrgSlug]; ok && r.Org != "" && name != "" && name != r.Org {
			bad(p+".org", "organization_roles[%d].org %q: org_slug %q is named %q elsewhere in the record", n, r.Org, r.OrgSlug, name)
		} else if !ok {
			names[r.OrgSlug] = r.Org
		}
	}
	for _, t := range []struct {
		lang string
		o    TextOrigin
	}{{"en", i.TextOrigin.En}, {"ko", i.TextOrigin.Ko}} {
		if t.o != "" && !t.o.IsValid() {
			bad("text_origin."+t.lang, "text_origin.%s %q is not one of ORIGINAL, HUMAN_TRANSLATION, MACHINE_TRANSLATION", t.lang, t.o)
		}
	}
	return es
}
