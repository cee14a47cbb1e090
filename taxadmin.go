package incidentlib

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The taxonomy and the organizations after a store's creation: the
// built-in taxonomy (seeds/taxonomy.json) seeds a new store, and from then
// on the store's own taxonomy is authoritative. An admin adds, relabels,
// aliases and deprecates terms, and adds, renames and merges
// organizations (TaxonomyAdmin); every such change is kept in a history
// (TaxonomyChange), written in the transaction of the change.

// Limits of the taxonomy's fields.
const (
	MaxLabelLen       = MaxNameLen // characters of a term's label, per language
	MaxDescriptionLen = MaxItemLen // characters of a term's description, per language
	MaxAliasLen       = 100        // characters of one alias
	MaxAliases        = MaxListLen // aliases of one term
)

// TaxonomyAction is what a change of the taxonomy or of the organizations
// did: the vocabulary of the taxonomy's history.
type TaxonomyAction string

// The taxonomy actions.
const (
	ActionAddTerm            TaxonomyAction = "ADD_TERM"
	ActionUpdateTerm         TaxonomyAction = "UPDATE_TERM"
	ActionAddAliases         TaxonomyAction = "ADD_ALIASES"
	ActionDeprecateTerm      TaxonomyAction = "DEPRECATE_TERM"
	ActionUndeprecateTerm    TaxonomyAction = "UNDEPRECATE_TERM"
	ActionAddOrganization    TaxonomyAction = "ADD_ORGANIZATION"
	ActionRenameOrganization TaxonomyAction = "RENAME_ORGANIZATION"
	ActionMergeOrganizations TaxonomyAction = "MERGE_ORGANIZATIONS"
	// ActionReleaseTerm: a newer release of the program brought a
	// built-in term the store lacked, added when the store was opened
	// (author "release").
	ActionReleaseTerm TaxonomyAction = "RELEASE_TERM"
	// The glossary's (glossaryadmin.go): an entry added, changed, removed.
	ActionGlossaryAdd    TaxonomyAction = "GLOSSARY_ADD"
	ActionGlossaryChange TaxonomyAction = "GLOSSARY_CHANGE"
	ActionGlossaryRemove TaxonomyAction = "GLOSSARY_REMOVE"
)

// ReleaseAuthor is the author of the terms a newer release adds to a store
// at open.
const ReleaseAuthor = "release"

// TaxonomyChange is one entry of the history of the taxonomy and the
// organizations.
type TaxonomyChange struct {
	// Number counts the entries of the store's history from 1.
	Number uint64 `json:"n"`
	// Seq is the store sequence after the change.
	Seq uint64 `json:"seq"`
	// At is the commit time, RFC 3339.
	At string `json:"at"`
	// Author is the name of the token that made the change.
	Author string         `json:"author"`
	Action TaxonomyAction `json:"action"`
	// Subject is the global id of what changed: term:KIND:SLUG, org:SLUG
	// (for a merge, the organization merged away) or glossary:KEY (for a
	// change, the key before it).
	Subject string `json:"subject"`
	// Before and After are the term or organization as JSON before and
	// after the change; Before is absent for an addition. A merge's After
	// is the surviving organization.
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Incidents are the ids of the incidents the change rewrote (an
	// organization's rename or merge).
	Incidents []string `json:"incidents,omitempty"`
}

// TaxonomyChangePage is one page of the history, newest first.
type TaxonomyChangePage struct {
	Changes     []*TaxonomyChange
	Cursors     []string
	HasNextPage bool
	TotalCount  int
}

// TermUpdate changes a term's texts; nil fields stay as they are, and a
// language left empty in a given Text keeps its value.
type TermUpdate struct {
	Label       *Text
	Description *Text
}

// MergeResult is what mergeOrganizations did.
type MergeResult struct {
	// Into is the surviving organization.
	Into *Organization
	// Incidents are the ids of the re-pointed incidents.
	Incidents []string
}

// TaxonomyAdmin changes the taxonomy and the organizations of the store
// (TaxonomyWriter, part of the one write side, Writer) and reads the
// history of those changes (TaxonomyHistoryReader).
type TaxonomyAdmin interface {
	TaxonomyWriter
	TaxonomyHistoryReader
}

// TaxonomyHistoryReader reads the history of the taxonomy's and the
// organizations' changes.
type TaxonomyHistoryReader interface {
	// TaxonomyHistory returns the history, newest first. EBADCURSOR for
	// a malformed cursor, EINVALID for a bad page size.
	TaxonomyHistory(ctx context.Context, page PageArgs) (*TaxonomyChangePage, error)
}

// TaxonomyWriter changes the taxonomy, the organizations and the glossary.
// Every method records author (the token's name) in the history, in the
// transaction of the change; a refusal writes nothing. Client mistakes are
// EINVALID (with the field), ENOTFOUND or ECONFLICT, never internal.
type TaxonomyWriter interface {
	// AddTerm adds a term (kind, slug, label, description; label.en is
	// required). ECONFLICT when the slug is already a term or an alias of
	// the kind.
	AddTerm(ctx context.Context, author string, t Term) (*Term, error)
	// UpdateTerm changes a term's labels and descriptions. ENOTFOUND for
	// an unknown term.
	UpdateTerm(ctx context.Context, author string, kind TermKind, slug string, u TermUpdate) (*Term, error)
	// AddTermAliases adds aliases to a term: each resolves to it on
	// writes and filters. ECONFLICT when one is already a term or another
	// term's alias.
	AddTermAliases(ctx context.Context, author string, kind TermKind, slug string, aliases []string) (*Term, error)
	// DeprecateTerm deprecates a term (deprecated true) or takes the
	// deprecation back. A deprecated term stays on the incidents that
	// carry it; an upsert that adds it to an incident is refused.
	DeprecateTerm(ctx context.Context, author string, kind TermKind, slug string, deprecated bool) (*Term, error)
	// AddOrganization adds an organization that no incident names yet.
	// ECONFLICT when the slug or the name is taken.
	AddOrganization(ctx context.Context, author string, o Organization) (*Organization, error)
	// RenameOrganization changes an organization's name on it and on
	// every incident that names it. ENOTFOUND, ECONFLICT when another
	// organization has the name.
	RenameOrganization(ctx context.Context, author, slug, name string) (*Organization, *MergeResult, error)
	// MergeOrganizations re-points every incident of from to into (as the
	// affected organization and in organization roles), removes from and
	// keeps its slug as an alias of into. ENOTFOUND for either.
	MergeOrganizations(ctx context.Context, author, from, into string) (*MergeResult, error)
	// AddGlossaryEntry adds an entry to the glossary (glossary.Validate).
	// ECONFLICT when its key is an entry's; EINVALID past glossary.MaxEntries.
	AddGlossaryEntry(ctx context.Context, author string, e GlossaryEntry) (*GlossaryEntry, error)
	// UpdateGlossaryEntry replaces the entry of key with e. ENOTFOUND for
	// an unknown key, ECONFLICT when e's key is another entry's.
	UpdateGlossaryEntry(ctx context.Context, author, key string, e GlossaryEntry) (*GlossaryEntry, error)
	// RemoveGlossaryEntry removes the entry of key and returns it. ENOTFOUND.
	RemoveGlossaryEntry(ctx context.Context, author, key string) (*GlossaryEntry, error)
}

// Validate checks a term's kind, slug, labels, descriptions and aliases
// with the limits and text rules of records; one EINVALID error per
// problem, each naming its field (kind, slug, label.en, ...).
func (t *Term) Validate() error {
	var p problems
	if !t.Kind.IsValid() {
		p.add(RuleStructure, "kind", "kind %q is not one of domain, symptom, component, root_cause, contributing, severity", t.Kind)
	}
	if !ValidSlug(t.Slug) {
		p.add(RuleStructure, "slug", "slug %q is not a slug (lowercase letters and digits in hyphen-separated words)", t.Slug)
	}
	if strings.TrimSpace(t.Label.En) == "" {
		p.add(RuleStructure, "label.en", "label.en is required")
	}
	t.validateTexts(&p)
	for n, a := range t.Aliases {
		if why := aliasProblem(a); why != "" {
			p.add(RuleStructure, "aliases."+strconv.Itoa(n), "aliases[%d] %s", n, why)
		}
	}
	if len(t.Aliases) > MaxAliases {
		p.add(RuleStructure, "aliases", "aliases has %d entries, more than the limit of %d", len(t.Aliases), MaxAliases)
	}
	return p.err()
}

func (t *Term) validateTexts(p *problems) {
	checkText(p, "label", t.Label, MaxLabelLen, false)
	checkText(p, "description", t.Description, MaxDescriptionLen, true)
}

// ValidateTermUpdate checks the texts of an update as Term.Validate
// checks a term's.
func ValidateTermUpdate(u TermUpdate) error {
	var p problems
	t := &Term{}
	if u.Label != nil {
		t.Label = *u.Label
	}
	if u.Description != nil {
		t.Description = *u.Description
	}
	t.validateTexts(&p)
	return p.err()
}

// aliasProblem says why a is not an alias, or "": one line of at most
// MaxAliasLen characters, lower case, no control character, no space at
// either end.
func aliasProblem(a string) string {
	switch {
	case !utf8.ValidString(a):
		return "is not valid UTF-8"
	case strings.TrimSpace(a) == "":
		return "is empty"
	case strings.TrimSpace(a) != a:
		return "has a space at its start or end"
	case utf8.RuneCountInString(a) > MaxAliasLen:
		return "is longer than " + strconv.Itoa(MaxAliasLen) + " characters"
	case lower(a) != a:
		return "has an upper-case letter (aliases are compared in lower case)"
	}
	if at, r := controlAt(a, false); at >= 0 {
		return fmt.Sprintf("has the control character U+%04X", r)
	}
	return ""
}

// ValidateAliases checks aliases to add, their field paths under
// "aliases".
func ValidateAliases(aliases []string) error {
	var p problems
	if len(aliases) == 0 {
		p.add(RuleStructure, "aliases", "give at least one alias")
	}
	if len(aliases) > MaxAliases {
		p.add(RuleStructure, "aliases", "aliases has %d entries, more than the limit of %d", len(aliases), MaxAliases)
	}
	for n, a := range aliases {
		if why := aliasProblem(a); why != "" {
			p.add(RuleStructure, "aliases."+strconv.Itoa(n), "aliases[%d] %s", n, why)
		}
	}
	return p.err()
}

// ValidateTermKind refuses a kind that is none of the taxonomy's
// (EINVALID, field "kind").
func ValidateTermKind(kind TermKind) error {
	if !kind.IsValid() {
		return FieldErrorf(EINVALID, []string{"kind"}, "kind %q is not one of domain, symptom, component, root_cause, contributing, severity", kind)
	}
	return nil
}

// ValidateMerge checks the slugs of a merge of organization from into
// organization into (EINVALID, fields "from" and "into").
func ValidateMerge(from, into string) error {
	var es Errors
	if !ValidSlug(from) {
		es = append(es, FieldErrorf(EINVALID, []string{"from"}, "from %q is not a slug", from))
	}
	if !ValidSlug(into) {
		es = append(es, FieldErrorf(EINVALID, []string{"into"}, "into %q is not a slug", into))
	}
	if len(es) == 0 && from == into {
		es = append(es, FieldErrorf(EINVALID, []string{"into"}, "an organization cannot be merged into itself"))
	}
	if len(es) > 0 {
		return es
	}
	return nil
}

// Validate checks an organization's slug and name with the rules of a
// record's org and org_slug.
func (o *Organization) Validate() error {
	var p problems
	if !ValidSlug(o.Slug) {
		p.add(RuleStructure, "slug", "slug %q is not a slug (lowercase letters and digits in hyphen-separated words)", o.Slug)
	}
	validateOrgName(&p, "name", o.Name)
	return p.err()
}

// ValidateOrganizationName checks an organization's name (field "name").
func ValidateOrganizationName(name string) error {
	var p problems
	validateOrgName(&p, "name", name)
	return p.err()
}

// validateOrgName adds the problems of an organization's name to p.
func validateOrgName(p *problems, field, name string) {
	if strings.TrimSpace(name) == "" {
		p.add(RuleStructure, field, "%s is required", field)
		return
	}
	if strings.TrimSpace(name) != name {
		p.add(RuleStructure, field, "%s has a space at its start or end", field)
	}
	checkLine(p, field, name, MaxNameLen)
}

// Deprecated reports whether the term of kind with slug is deprecated.
func (t *Taxonomy) Deprecated(kind TermKind, slug string) bool {
	term := t.Term(kind, slug)
	return term != nil && term.Deprecated
}

// Canonical returns slug's term slug of kind: slug itself when it is a
// term, the term it is an alias of, or slug unchanged when it is neither.
func (t *Taxonomy) Canonical(kind TermKind, slug string) string {
	if t == nil || slug == "" || t.Term(kind, slug) != nil {
		return slug
	}
	if term := t.Resolve(kind, slug); term != nil {
		return term.Slug
	}
	return slug
}

// CanonicalTerms rewrites the term lists of inc so that every alias of the
// taxonomy becomes its term's slug, dropping the repeats this makes.
func (i *Incident) CanonicalTerms(t *Taxonomy) {
	list := func(kind TermKind, slugs []string) []string {
		changed := false
		for _, s := range slugs {
			if t.Canonical(kind, s) != s {
				changed = true
				break
			}
		}
		if !changed {
			return slugs
		}
		out := make([]string, 0, len(slugs))
		seen := map[string]bool{}
		for _, s := range slugs {
			c := t.Canonical(kind, s)
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
		return out
	}
	i.Domain = list(KindDomain, i.Domain)
	i.Symptoms = list(KindSymptom, i.Symptoms)
	i.Components = list(KindComponent, i.Components)
	i.Contributing = list(KindContributing, i.Contributing)
	i.RootCause = t.Canonical(KindRootCause, i.RootCause)
	i.Severity = t.Canonical(KindSeverity, i.Severity)
}

// DeprecatedAdded returns one EINVALID error, naming its field, for each
// deprecated term of t that inc carries and old (nil: none) does not: an
// upsert may keep a deprecated term but not add one.
func (i *Incident) DeprecatedAdded(t *Taxonomy, old *Incident) error {
	had := map[TermKey]bool{}
	if old != nil {
		for _, k := range old.Terms() {
			had[k] = true
		}
	}
	var es Errors
	check := func(field string, kind TermKind, indexed bool, slugs ...string) {
		for n, s := range slugs {
			if s == "" || had[TermKey{kind, s}] || !t.Deprecated(kind, s) {
				continue
			}
			f := []string{field}
			if indexed {
				f = append(f, strconv.Itoa(n))
			}
			es = append(es, FieldErrorf(EINVALID, f, "%s %q is a deprecated %s term: it stays on the incidents that have it but cannot be added to one", field, s, kind))
		}
	}
	check("domain", KindDomain, true, i.Domain...)
	check("symptoms", KindSymptom, true, i.Symptoms...)
	check("components", KindComponent, true, i.Components...)
	check("contributing", KindContributing, true, i.Contributing...)
	check("root_cause", KindRootCause, false, i.RootCause)
	check("severity", KindSeverity, false, i.Severity)
	if len(es) == 0 {
		return nil
	}
	return es
}

// TaxonomyLog reads the history of the taxonomy and the organizations in
// order, for a follower: each entry carries the whole term or
// organization after the change, so replaying the entries (TaxonomyApplier)
// gives another store the same taxonomy, organizations and aliases.
type TaxonomyLog interface {
	// TaxonomyChangesAfter returns, oldest first, up to limit entries
	// numbered above after. Returns EINVALID for a limit that is not
	// positive.
	TaxonomyChangesAfter(ctx context.Context, after uint64, limit int) ([]*TaxonomyChange, error)
}

// TaxonomyApplier applies a primary's history of the taxonomy and the
// organizations to a follower's store.
type TaxonomyApplier interface {
	// AppliedTaxonomy returns the number of the last entry applied (0:
	// none).
	AppliedTaxonomy(ctx context.Context) (uint64, error)
	// ApplyTaxonomyChanges applies entries numbered above from, oldest
	// first, in one transaction with the position they reach, and returns
	// it. ECONFLICT when from is not the stored position; EINVALID for an
	// entry that would break the taxonomy; nothing is written then.
	ApplyTaxonomyChanges(ctx context.Context, from uint64, changes []*TaxonomyChange) (uint64, error)
}
