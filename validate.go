package incidentlib

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on record fields.
const (
	MaxTitleLen   = 500    // characters
	MaxTextLen    = 20_000 // characters, per language, of summary, lessons and the other long texts
	MaxItemLen    = 2_000  // characters of one remediation step or action item
	MaxListLen    = 200    // entries of any list
	MaxNameLen    = 200    // characters of org and other short strings
	MaxURLLen     = 2_048  // bytes
	MaxIDNumber   = 1<<32 - 1
	minIDDigits   = 4
	maxIDDigitLen = 10
)

// ParseID returns the number of an incident id "IL-" followed by at least
// four digits (zero-padded to four, never more). ok is false for anything
// else, including non-canonical spellings such as "IL-00213".
func ParseID(id string) (n uint32, ok bool) {
	digits, found := strings.CutPrefix(id, "IL-")
	if !found || len(digits) < minIDDigits || len(digits) > maxIDDigitLen {
		return 0, false
	}
	// Ten digits at most fit in a uint64 (strconv.ParseUint, general,
	// was 2% of a list page's instructions: ids are parsed per lookup).
	var v uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + uint64(c)
	}
	// Canonical: exactly FormatID's digits, zero-padded to four and no
	// further leading zero.
	if v > MaxIDNumber || len(digits) > minIDDigits && digits[0] == '0' {
		return 0, false
	}
	return uint32(v), true
}

// FormatID returns the canonical id of number n: IL- and at least four
// digits, zero-padded.
func FormatID(n uint32) string {
	var b [3 + 10]byte
	return string(AppendID(b[:0], n))
}

// AppendID appends the id of number n (FormatID) to dst.
func AppendID(dst []byte, n uint32) []byte {
	dst = append(dst, "IL-"...)
	for d := uint32(1000); d > 1 && n < d; d /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendUint(dst, uint64(n), 10)
}

// ParseDate parses a YYYY-MM-DD calendar date.
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a calendar date in the form YYYY-MM-DD", s)
	}
	return t, nil
}

// ParseTimestamp parses an RFC 3339 time such as updated_at.
func ParseTimestamp(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time such as 2026-11-30T12:00:00Z", s)
	}
	return t, nil
}

// ParseDuration parses a timeline duration: a Go duration such as "73h",
// "45m" or "2h30m", or a whole number of days such as "3d".
func ParseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n >= 0 && n < 100_000 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 73h, 45m, 2h30m or 3d", s)
	}
	return d, nil
}

// ValidHTTPURL reports why s is not an absolute http(s) URL, or "".
func ValidHTTPURL(s string) string {
	if len(s) > MaxURLLen {
		return fmt.Sprintf("is longer than %d bytes", MaxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an absolute http(s) URL", s)
	}
	return ""
}

// Validate checks everything about the record that needs nothing else:
// id, org, texts, dates, durations, URLs, slugs and lengths. It returns an
// Errors list with one EINVALID error per problem, each naming its field.
// Whether slugs exist in the taxonomy and links point to real incidents is
// checked by ValidateTerms and by the store.
func (i *Incident) Validate() error {
	var es Errors
	bad := func(field string, format string, args ...any) {
		es = append(es, FieldErrorf(EINVALID, strings.Split(field, "."), format, args...))
	}
	if _, ok := ParseID(i.ID); !ok {
		bad("id", "id %q is not IL- followed by at least four digits (such as IL-0213)", i.ID)
	}
	if strings.TrimSpace(i.Org) == "" {
		bad("org", "org is required")
	} else if utf8.RuneCountInString(i.Org) > MaxNameLen {
		bad("org", "org is longer than %d characters", MaxNameLen)
	}
	if !ValidSlug(i.OrgSlug) {
		bad("org_slug", "org_slug %q is not a slug (lowercase letters and digits in hyphen-separated words)", i.OrgSlug)
	}
	if i.Title.IsZero() {
		bad("title", "a title in at least one language is required")
	}
	if i.Date != "" {
		if _, err := ParseDate(i.Date); err != nil {
			bad("date", "date %s", err)
		}
	}
	if i.UpdatedAt != "" {
		if _, err := ParseTimestamp(i.UpdatedAt); err != nil {
			bad("updated_at", "updated_at %s", err)
		}
	}
	if utf8.RuneCountInString(i.DateKind) > 50 {
		bad("date_kind", "date_kind is longer than 50 characters")
	}
	checkText := func(field string, t Text, max int) {
		for lang, s := range map[string]string{"en": t.En, "ko": t.Ko} {
			if !utf8.ValidString(s) {
				bad(field+"."+lang, "%s.%s is not valid UTF-8", field, lang)
			} else if n := utf8.RuneCountInString(s); n > max {
				bad(field+"."+lang, "%s.%s has %d characters, more than the limit of %d", field, lang, n, max)
			}
		}
	}
	checkText("title", i.Title, MaxTitleLen)
	checkText("summary", i.Summary, MaxTextLen)
	checkText("lessons", i.Lessons, MaxTextLen)
	checkText("trigger", i.Trigger, MaxTextLen)
	checkText("detection", i.Detection, MaxTextLen)
	checkText("symptoms_text", i.SymptomsText, MaxTextLen)
	checkSlugs := func(field string, list []string) {
		if len(list) > MaxListLen {
			bad(field, "%s has %d entries, more than the limit of %d", field, len(list), MaxListLen)
		}
		seen := map[string]bool{}
		for n, s := range list {
			if !ValidSlug(s) {
				bad(fmt.Sprintf("%s.%d", field, n), "%s[%d] %q is not a slug", field, n, s)
			} else if seen[s] {
				bad(fmt.Sprintf("%s.%d", field, n), "%s[%d] %q is listed twice", field, n, s)
			}
			seen[s] = true
		}
	}
	checkSlugs("domain", i.Domain)
	checkSlugs("symptoms", i.Symptoms)
	checkSlugs("components", i.Components)
	checkSlugs("contributing", i.Contributing)
	if i.RootCause != "" && !ValidSlug(i.RootCause) {
		bad("root_cause", "root_cause %q is not a slug", i.RootCause)
	}
	if i.Severity != "" && !ValidSlug(i.Severity) {
		bad("severity", "severity %q is not a slug", i.Severity)
	}
	for _, s := range []struct{ field, v string }{{"impact.scope", i.Impact.Scope}, {"impact.users", i.Impact.Users}, {"impact.region", i.Impact.Region}} {
		if utf8.RuneCountInString(s.v) > MaxItemLen {
			bad(s.field, "%s is longer than %d characters", s.field, MaxItemLen)
		}
	}
	if i.Timeline.DetectedAfter != "" {
		if _, err := ParseDuration(i.Timeline.DetectedAfter); err != nil {
			bad("timeline.detected_after", "timeline.detected_after %s", err)
		}
	}
	if i.Timeline.ResolvedAfter != "" {
		if _, err := ParseDuration(i.Timeline.ResolvedAfter); err != nil {
			bad("timeline.resolved_after", "timeline.resolved_after %s", err)
		}
	}
	for _, l := range []struct {
		field string
		items []Item
	}{{"remediation", i.Remediation}, {"action_items", i.ActionItems}} {
		if len(l.items) > MaxListLen {
			bad(l.field, "%s has %d entries, more than the limit of %d", l.field, len(l.items), MaxListLen)
		}
		for n, it := range l.items {
			checkText(fmt.Sprintf("%s.%d.text", l.field, n), it.Text, MaxItemLen)
		}
	}
	if len(i.Sources) > MaxListLen {
		bad("sources", "sources has %d entries, more than the limit of %d", len(i.Sources), MaxListLen)
	}
	for n, s := range i.Sources {
		if why := ValidHTTPURL(s.URL); why != "" {
			bad(fmt.Sprintf("sources.%d.url", n), "sources[%d].url %s", n, why)
		}
		if s.Archived != "" {
			if why := ValidHTTPURL(s.Archived); why != "" {
				bad(fmt.Sprintf("sources.%d.archived", n), "sources[%d].archived %s", n, why)
			}
		}
	}
	if i.URL != "" {
		if why := ValidHTTPURL(i.URL); why != "" {
			bad("url", "url %s", why)
		}
	}
	if len(i.Related) > MaxListLen {
		bad("related", "related has %d entries, more than the limit of %d", len(i.Related), MaxListLen)
	}
	for n, r := range i.Related {
		if _, ok := ParseID(r); !ok {
			bad(fmt.Sprintf("related.%d", n), "related[%d] %q is not an incident id", n, r)
		} else if r == i.ID {
			bad(fmt.Sprintf("related.%d", n), "related[%d] points to the incident itself", n)
		}
	}
	if i.RecurrenceOf != "" {
		if _, ok := ParseID(i.RecurrenceOf); !ok {
			bad("recurrence_of", "recurrence_of %q is not an incident id", i.RecurrenceOf)
		} else if i.RecurrenceOf == i.ID {
			bad("recurrence_of", "recurrence_of points to the incident itself")
		}
	}
	if i.Review.ReviewedAt != "" {
		if _, err := ParseTimestamp(i.Review.ReviewedAt); err != nil {
			if _, err2 := ParseDate(i.Review.ReviewedAt); err2 != nil {
				bad("review.reviewed_at", "review.reviewed_at %s", err)
			}
		}
	}
	es = append(es, i.validateProvenance()...)
	for name := range i.Extra {
		if incidentKnown[name] {
			bad(name, "extra field %q has the name of a known field", name)
		}
	}
	if len(es) == 0 {
		return nil
	}
	return es
}

// ValidateTerms checks that every term slug of the record exists in the
// taxonomy for its kind.
func (i *Incident) ValidateTerms(t *Taxonomy) error {
	var es Errors
	check := func(field string, kind TermKind, slugs ...string) {
		for n, s := range slugs {
			if s != "" && t.Term(kind, s) == nil {
				f := []string{field}
				if field != "root_cause" && field != "severity" {
					f = append(f, strconv.Itoa(n))
				}
				es = append(es, FieldErrorf(EINVALID, f, "%s %q is not a %s term of the taxonomy", field, s, kind))
			}
		}
	}
	check("domain", KindDomain, i.Domain...)
	check("symptoms", KindSymptom, i.Symptoms...)
	check("components", KindComponent, i.Components...)
	check("contributing", KindContributing, i.Contributing...)
	check("root_cause", KindRootCause, i.RootCause)
	check("severity", KindSeverity, i.Severity)
	if len(es) == 0 {
		return nil
	}
	return es
}

// Terms returns every term key the record carries.
func (i *Incident) Terms() []TermKey {
	var keys []TermKey
	add := func(kind TermKind, slugs ...string) {
		for _, s := range slugs {
			if s != "" {
				keys = append(keys, TermKey{kind, s})
			}
		}
	}
	add(KindDomain, i.Domain...)
	add(KindSymptom, i.Symptoms...)
	add(KindComponent, i.Components...)
	add(KindContributing, i.Contributing...)
	add(KindRootCause, i.RootCause)
	add(KindSeverity, i.Severity)
	return keys
}
