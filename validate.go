package incidentlib

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
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

// MinUpdatedAt and MaxUpdatedAt bound a record's updated_at: the times
// the store's order of updates holds (int64 nanoseconds since 1970,
// 1677-09-21 to 2262-04-11). An updatedSince filter outside them is
// answered as the calendar says: every record, or none.
var (
	MinUpdatedAt = time.Unix(0, math.MinInt64).UTC()
	MaxUpdatedAt = time.Unix(0, math.MaxInt64).UTC()
)

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

// Rule is a class of the record rules: the reason a replica or an
// upstream reader skips a record (RuleStructure, RuleURLScheme, RuleSize),
// or RuleText, which only writes and imports refuse.
type Rule string

// The rules a record is held to (docs/writes.md).
const (
	// RuleStructure: the record's shape: id, slugs, dates, durations,
	// lengths, links (none to itself), duplicates, terms of the taxonomy.
	RuleStructure Rule = "structure"
	// RuleURLScheme: a URL that is not an absolute http(s) URL, such as
	// javascript:alert(1).
	RuleURLScheme Rule = "url_scheme"
	// RuleSize: the record's IL-JSON is over the record size limit
	// (--max-record, CheckRecordSize).
	RuleSize Rule = "size"
	// RuleText: a control character (C0 but tab and newline where text is
	// multi-line, DEL, C1) or a bidirectional override or isolate in text.
	// Writes and imports refuse it; records stored before the rule stay
	// readable and replicable, so a replica or an upstream reader takes
	// them, and check lists them.
	RuleText Rule = "text"
)

// SkipRules are the rules for which a replica or an upstream reader skips
// a record, in the order SkipRule reports them: the bounded label values
// of incidentlib_replica_records_skipped_total and
// incidentlib_upstream_records_skipped_total.
var SkipRules = []Rule{RuleSize, RuleURLScheme, RuleStructure}

// RecordError is the error of Validate and ValidateIncoming: one EINVALID
// error per problem, each naming its field (Errors), and the rule each
// breaks (Rules[k] is the rule of Errors[k]). ErrorList, ErrorCode and
// errors.As see the Errors.
type RecordError struct {
	Errors Errors
	Rules  []Rule
}

func (e *RecordError) Error() string { return e.Errors.Error() }

// Unwrap returns the Errors.
func (e *RecordError) Unwrap() error { return e.Errors }

// Broken reports whether the record breaks rule r.
func (e *RecordError) Broken(r Rule) bool {
	for _, x := range e.Rules {
		if x == r {
			return true
		}
	}
	return false
}

// Only returns the problems of the given rules, nil when there are none.
func (e *RecordError) Only(rules ...Rule) *RecordError {
	var out RecordError
	for k, r := range e.Rules {
		for _, want := range rules {
			if r == want {
				out.Errors = append(out.Errors, e.Errors[k])
				out.Rules = append(out.Rules, r)
			}
		}
	}
	if len(out.Errors) == 0 {
		return nil
	}
	return &out
}

// SkipRule returns the rule for which a replica or an upstream reader
// skips a record that ValidateIncoming refused with err: the first of
// SkipRules it breaks, or "" when it breaks none (nil err, or only
// RuleText: the record is taken). An error that is not a *RecordError
// counts as RuleStructure.
func SkipRule(err error) Rule {
	if err == nil {
		return ""
	}
	var re *RecordError
	if !errors.As(err, &re) {
		return RuleStructure
	}
	for _, r := range SkipRules {
		if re.Broken(r) {
			return r
		}
	}
	return ""
}

// ValidateIncoming is the one validation of a record that enters the
// library from outside: a write (upsertIncident, importIncidents, import),
// a change a replica reads from its primary's feed, a record an upstream
// library answers. It runs Validate, ValidateTerms against tax (skipped
// when tax is nil) and CheckRecordSize against maxRecord bytes (0:
// DefaultMaxRecordBytes) on size, the record's IL-JSON as received in
// bytes, or, when size is 0, its canonical IL-JSON as measured here. It
// returns nil or a *RecordError: writes refuse any problem; a replica or
// an upstream reader skips the record when SkipRule names a rule.
func (i *Incident) ValidateIncoming(tax *Taxonomy, maxRecord, size int) error {
	var p problems
	if size <= 0 {
		b, err := json.Marshal(i)
		if err != nil {
			p.add(RuleStructure, "", "the record does not encode as IL-JSON: %v", err)
		}
		size = len(b)
	}
	if err := CheckRecordSize(i.ID, size, maxRecord); err != nil {
		p.es = append(p.es, err.(*Error))
		p.rules = append(p.rules, RuleSize)
	}
	i.validate(&p)
	if tax != nil {
		for _, e := range ErrorList(i.ValidateTerms(tax)) {
			p.es = append(p.es, e)
			p.rules = append(p.rules, RuleStructure)
		}
	}
	return p.err()
}

// problems collects the problems of a record, each with its rule.
type problems struct {
	es    Errors
	rules []Rule
}

func (p *problems) add(rule Rule, field string, format string, args ...any) {
	var f []string
	if field != "" {
		f = strings.Split(field, ".")
	}
	p.es = append(p.es, FieldErrorf(EINVALID, f, format, args...))
	p.rules = append(p.rules, rule)
}

func (p *problems) err() error {
	if len(p.es) == 0 {
		return nil
	}
	return &RecordError{Errors: p.es, Rules: p.rules}
}

// Validate checks everything about the record that needs nothing else:
// id, org, texts (lengths, UTF-8 and control characters: checkText),
// dates, durations, URLs, slugs and lengths. It returns nil or a
// *RecordError with one EINVALID error per problem, each naming its field.
// Whether slugs exist in the taxonomy is checked by ValidateTerms, the
// record's size by CheckRecordSize (both also by ValidateIncoming), and
// whether links point to real incidents by the store.
func (i *Incident) Validate() error {
	var p problems
	i.validate(&p)
	return p.err()
}

func (i *Incident) validate(p *problems) {
	bad := func(field string, format string, args ...any) { p.add(RuleStructure, field, format, args...) }
	if _, ok := ParseID(i.ID); !ok {
		bad("id", "id %q is not IL- followed by at least four digits (such as IL-0213)", i.ID)
	}
	if strings.TrimSpace(i.Org) == "" {
		bad("org", "org is required")
	} else {
		checkLine(p, "org", i.Org, MaxNameLen)
	}
	if !ValidSlug(i.OrgSlug) {
		bad("org_slug", "org_slug %q is not a slug (lowercase letters and digits in hyphen-separated words)", i.OrgSlug)
	}
	if i.Title.IsZero() {
		bad("title", "a title in at least one language is required")
	}
	if i.Date != "" {
		if t, err := ParseDate(i.Date); err != nil {
			bad("date", "date %s", err)
		} else if t.Year() < 1 {
			bad("date", "date %q is before 0001-01-01", i.Date)
		}
	}
	if i.UpdatedAt != "" {
		if t, err := ParseTimestamp(i.UpdatedAt); err != nil {
			bad("updated_at", "updated_at %s", err)
		} else if t.Before(MinUpdatedAt) || t.After(MaxUpdatedAt) {
			bad("updated_at", "updated_at %q is outside %s to %s, the times the store orders", i.UpdatedAt,
				MinUpdatedAt.Format(time.RFC3339), MaxUpdatedAt.Format(time.RFC3339))
		}
	}
	if i.CreatedAt != "" {
		if _, err := ParseTimestamp(i.CreatedAt); err != nil {
			bad("created_at", "created_at %s", err)
		}
	}
	if i.ReviewState != "" && !i.ReviewState.IsValid() {
		bad("review_state", "review_state %q is not one of DRAFT, IN_REVIEW, REVIEWED, DISPUTED, WITHDRAWN", i.ReviewState)
	}
	if i.Version < 0 {
		bad("version", "version %d is negative", i.Version)
	}
	checkLine(p, "date_kind", i.DateKind, 50)
	checkText(p, "title", i.Title, MaxTitleLen, false)
	checkText(p, "summary", i.Summary, MaxTextLen, true)
	checkText(p, "lessons", i.Lessons, MaxTextLen, true)
	checkText(p, "trigger", i.Trigger, MaxTextLen, true)
	checkText(p, "detection", i.Detection, MaxTextLen, true)
	checkText(p, "symptoms_text", i.SymptomsText, MaxTextLen, true)
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
	checkLine(p, "impact.scope", i.Impact.Scope, MaxItemLen)
	checkLine(p, "impact.users", i.Impact.Users, MaxItemLen)
	checkLine(p, "impact.region", i.Impact.Region, MaxItemLen)
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
			checkText(p, fmt.Sprintf("%s.%d.text", l.field, n), it.Text, MaxItemLen, true)
		}
	}
	if len(i.Sources) > MaxListLen {
		bad("sources", "sources has %d entries, more than the limit of %d", len(i.Sources), MaxListLen)
	}
	for n, s := range i.Sources {
		if why := ValidHTTPURL(s.URL); why != "" {
			p.add(RuleURLScheme, fmt.Sprintf("sources.%d.url", n), "sources[%d].url %s", n, why)
		}
		if s.Archived != "" {
			if why := ValidHTTPURL(s.Archived); why != "" {
				p.add(RuleURLScheme, fmt.Sprintf("sources.%d.archived", n), "sources[%d].archived %s", n, why)
			}
		}
		checkLine(p, fmt.Sprintf("sources.%d.kind", n), s.Kind, 0)
	}
	if i.URL != "" {
		if why := ValidHTTPURL(i.URL); why != "" {
			p.add(RuleURLScheme, "url", "url %s", why)
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
	// No length limit of their own (the record's size bounds them).
	checkLine(p, "review.written_by", i.Review.WrittenBy, 0)
	checkLine(p, "review.reviewed_by", i.Review.ReviewedBy, 0)
	if i.Review.ReviewedAt != "" {
		if _, err := ParseTimestamp(i.Review.ReviewedAt); err != nil {
			if _, err2 := ParseDate(i.Review.ReviewedAt); err2 != nil {
				bad("review.reviewed_at", "review.reviewed_at %s", err)
			}
		}
	}
	i.validateEvents(p) // events.go
	for _, e := range i.validateProvenance() {
		p.es = append(p.es, e)
		p.rules = append(p.rules, RuleStructure)
	}
	// Member names at every depth: none reserved, none twice (grammar.go).
	checkMembers(p, i)
}
