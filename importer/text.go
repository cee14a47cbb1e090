package importer

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// ellipsis ends a text that was cut to fit a limit.
const ellipsis = "…"

// truncate cuts s to at most max runes at a rune boundary, ending it with
// "…" when it was cut. It reports whether it cut.
func truncate(s string, max int) (string, bool) {
	if max <= 0 {
		return "", s != ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRightFunc(s[:i], unicode.IsSpace) + ellipsis, true
		}
		n++
	}
	return s, false
}

// textFitter truncates texts to the validation limits and remembers which
// fields it cut, for Record.Warnings.
type textFitter struct{ warnings []string }

func (t *textFitter) fit(field, s string, max int) string {
	s = strings.TrimSpace(s)
	out, cut := truncate(s, max)
	if cut {
		t.warnings = append(t.warnings, fmt.Sprintf("%s cut from %d to %d characters", field, utf8.RuneCountInString(s), max))
	}
	return out
}

// fitItems turns texts into items, cut to the item limit and the list limit.
func (t *textFitter) fitItems(field string, texts []string) []incidentlib.Item {
	var items []incidentlib.Item
	for _, s := range texts {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if len(items) == incidentlib.MaxListLen {
			t.warnings = append(t.warnings, fmt.Sprintf("%s cut to %d entries", field, incidentlib.MaxListLen))
			break
		}
		items = append(items, incidentlib.Item{Text: incidentlib.Text{En: t.fit(fmt.Sprintf("%s[%d]", field, len(items)), s, incidentlib.MaxItemLen)}})
	}
	return items
}

// formatDuration writes d in the timeline form: hours, minutes and seconds
// that are not zero, such as "73h", "45m", "2h30m" or "39s"; "0m" for zero.
func formatDuration(d time.Duration) string {
	if d < 0 {
		return ""
	}
	d = d.Round(time.Second)
	h := d / time.Hour
	m := (d % time.Hour) / time.Minute
	s := (d % time.Minute) / time.Second
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if s > 0 {
		fmt.Fprintf(&b, "%ds", s)
	}
	if b.Len() == 0 {
		return "0m"
	}
	return b.String()
}

// timeLayouts are the timestamp forms the collections use. Times without a
// zone are taken as UTC.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05 Z07:00",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// parseTime parses a source timestamp or date. Years before 1970 and
// dates without a time are fine.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date or time such as 2021-10-28 or 2021-10-28T13:37:00Z", s)
}

// dateOf is the calendar date of t in its own zone, as YYYY-MM-DD. Years
// outside 0000-9999 give "".
func dateOf(t time.Time) string {
	if t.Year() < 0 || t.Year() > 9999 {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", t.Year(), t.Month(), t.Day())
}

// lineOf returns the 1-based line of byte offset off in data.
func lineOf(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	n := 1
	for _, c := range data[:off] {
		if c == '\n' {
			n++
		}
	}
	return n
}

var (
	footnoteRefRE = regexp.MustCompile(`\s*\[\^[^\]\s]+\]`)
	blankLinesRE  = regexp.MustCompile(`\n{3,}`)
	spacesRE      = regexp.MustCompile(`[ \t]+`)
)

// cleanMarkdown turns a Markdown fragment into the plain text IL-JSON
// keeps: HTML entities decoded, footnote references and bold markers
// removed, runs of blank lines collapsed.
func cleanMarkdown(s string) string {
	s = html.UnescapeString(s)
	s = footnoteRefRE.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "**", "")
	s = strings.ReplaceAll(s, "__", "")
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimRightFunc(line, unicode.IsSpace))
	}
	s = strings.Join(lines, "\n")
	s = blankLinesRE.ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}

// oneLine collapses whitespace, for titles and names.
func oneLine(s string) string {
	return strings.TrimSpace(spacesRE.ReplaceAllString(strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " "), " "))
}

// firstSentence returns the first sentence of s (up to and including the
// first ". " or the end).
func firstSentence(s string) string {
	s = oneLine(s)
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && s[i+1] == ' ' && i > 0 && unicode.IsLower(rune(s[i-1])) {
			return s[:i+1]
		}
	}
	return s
}
