package importer

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
)

// section is one "#" or "##" section of a sectioned Markdown record.
type section struct {
	Name  string // as written
	Key   string // known name: summary, timeline, contributing, lessons, actions, attendees, stats; or ""
	Line  int    // file line of the heading
	Lines []string
	Start int // file line of Lines[0]
}

var headingRE = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t#]*$`)

// sectionKey names a heading of the dfds format.
func sectionKey(name string) string {
	n := strings.ToLower(oneLine(name))
	n = strings.TrimRight(n, ": ")
	switch {
	case strings.HasPrefix(n, "summary"):
		return "summary"
	case strings.HasPrefix(n, "timeline"):
		return "timeline"
	case strings.HasPrefix(n, "contributing factor"), strings.HasPrefix(n, "root cause"):
		return "contributing"
	case strings.HasPrefix(n, "lessons learn"), strings.HasPrefix(n, "lesson learn"):
		return "lessons"
	case strings.HasPrefix(n, "action item"):
		return "actions"
	case strings.HasPrefix(n, "attendee"), strings.HasPrefix(n, "atendee"):
		return "attendees"
	case n == "stats" || n == "statistics":
		return "stats"
	}
	return ""
}

// splitSections returns the first level-1 heading (the title, with its
// line) and the sections that level-1 and level-2 headings open; deeper
// headings stay in their section's text. Lines inside fenced code blocks
// are never headings.
func splitSections(data []byte) (title string, titleLine int, preamble []string, secs []*section) {
	var cur *section
	fence := false
	for n, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = !fence
		}
		if !fence {
			if m := headingRE.FindStringSubmatch(line); m != nil && len(m[1]) <= 2 {
				if len(m[1]) == 1 && titleLine == 0 && sectionKey(m[2]) == "" {
					title, titleLine = m[2], n+1
					continue
				}
				cur = &section{Name: m[2], Key: sectionKey(m[2]), Line: n + 1, Start: n + 2}
				secs = append(secs, cur)
				continue
			}
		}
		if cur == nil {
			preamble = append(preamble, line)
		} else {
			cur.Lines = append(cur.Lines, line)
		}
	}
	return title, titleLine, preamble, secs
}

// looksSectioned reports whether Markdown text has at least two of the
// dfds sections.
func looksSectioned(text []byte) bool {
	_, _, _, secs := splitSections(text)
	seen := map[string]bool{}
	for _, s := range secs {
		if s.Key != "" {
			seen[s.Key] = true
		}
	}
	return len(seen) >= 2
}

var (
	pmIDRE        = regexp.MustCompile(`^(PM(\d{4})-\d{3})\b`)
	fileTitleRE   = regexp.MustCompile(`^PM\d{4}-\d{3}\s*-\s*(.+)$`)
	bulletRE      = regexp.MustCompile(`^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$`)
	footnoteDefRE = regexp.MustCompile(`^\[\^([^\]]+)\]:\s*(.*)$`)
	statRE        = regexp.MustCompile(`^\s*[-*]?\s*([A-Za-z ]+?)\s*:\s*(.*?)\s*$`)
	durPartRE     = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
	rowDateRE     = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})(?:\s+(\d{1,2}):(\d{2}))?`)
)

// listItems splits a Markdown list into its items; lines indented under
// an item, and nested items, belong to it. Text that is not a list gives
// one item per paragraph.
func listItems(lines []string) []string {
	var items []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			items = append(items, cleanMarkdown(strings.Join(cur, "\n")))
		}
		cur = nil
	}
	inList := false
	for _, line := range lines {
		if m := bulletRE.FindStringSubmatch(line); m != nil && len(m[1]) == 0 {
			flush()
			inList = true
			cur = []string{m[2]}
			continue
		}
		t := strings.TrimSpace(line)
		if t == "" {
			if !inList {
				flush()
			}
			continue
		}
		if inList && len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			cur = append(cur, t)
			continue
		}
		if inList {
			flush()
			inList = false
		}
		cur = append(cur, t)
	}
	flush()
	var out []string
	for _, it := range items {
		if strings.Trim(it, "-*+ ") != "" {
			out = append(out, it)
		}
	}
	return out
}

// bodyText is a section's text without footnote definitions, which it
// returns separately.
func bodyText(s *section) (string, []string) {
	if s == nil {
		return "", nil
	}
	var keep, notes []string
	for _, line := range s.Lines {
		if m := footnoteDefRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			notes = append(notes, "["+m[1]+"] "+m[2])
			continue
		}
		keep = append(keep, line)
	}
	return cleanMarkdown(strings.Join(keep, "\n")), notes
}

// isPlaceholder reports whether a template's text is left in a section.
func isPlaceholder(s string) bool {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(s), "-* "))
	return t == "" || t == "xxx" || t == "yyy" || t == "zzz" || t == "short event description" || t == "short event description."
}

// parseSectioned reads a dfds record. It returns a skip reason for files
// that are not records (the template).
func (l *loader) parseSectioned(f *file) ([]Record, []Problem, string) {
	title, titleLine, preamble, secs := splitSections(f.Data)
	byKey := map[string]*section{}
	for _, s := range secs {
		if s.Key == "" {
			continue
		}
		if prev := byKey[s.Key]; prev != nil {
			if s.Key == "lessons" || s.Key == "actions" || s.Key == "contributing" || s.Key == "summary" {
				prev.Lines = append(prev.Lines, s.Lines...) // a repeated section continues the first
				continue
			}
			return nil, []Problem{{Where: fmt.Sprintf("%s:%d", f.Path, s.Line), Reason: fmt.Sprintf("section %q appears twice (first at line %d)", s.Name, prev.Line)}}, ""
		}
		byKey[s.Key] = s
	}
	base := path.Base(f.Rel)
	stem := strings.TrimSuffix(base, ".md")
	if strings.EqualFold(oneLine(title), "Incident Title") || isTemplateName(base) {
		return nil, nil, "not a record: template"
	}
	if len(byKey) < 2 && titleLine == 0 {
		return nil, []Problem{{Where: f.Path, Reason: "not a sectioned postmortem: no title and fewer than two of Summary, Timeline, Contributing Factors, Lessons Learned, Action Items, Stats"}}, ""
	}
	pmID, pmYear := "", ""
	if m := pmIDRE.FindStringSubmatch(stem); m != nil {
		pmID, pmYear = m[1], m[2]
	}
	id := pmID
	if id == "" {
		id = stem
	}
	rec := Record{SourceKey: f.Coll.Name + "/" + id, Where: f.Path + ":1"}
	if titleLine > 0 {
		rec.Where = fmt.Sprintf("%s:%d", f.Path, titleLine)
	}
	inc := &incidentlib.Incident{Review: incidentlib.Review{WrittenBy: "import"}}
	rec.Incident = inc
	var fit textFitter

	// Organization: the collection's own.
	org := l.opts.Org
	if org == "" {
		org = collectionOrg(f.Coll)
	}
	inc.Org, inc.OrgSlug, rec.OrgGuessed = l.resolveOrg(org)
	// The collection is the organization's own postmortems, in English.
	inc.Verification = incidentlib.VerificationPrimarySource

	// Title: the heading, else the file name after "PMyyyy-nnn - ".
	t := cleanMarkdown(oneLine(title))
	if t == "" {
		if m := fileTitleRE.FindStringSubmatch(stem); m != nil {
			t = oneLine(m[1])
		} else {
			t = stem
		}
		rec.Warnings = append(rec.Warnings, "no title heading: the title is taken from the file name")
	}
	inc.Title.En = fit.fit("title", t, incidentlib.MaxTitleLen)

	var notes []string
	summary, n := bodyText(byKey["summary"])
	notes = append(notes, n...)
	if summary == "" {
		summary = cleanMarkdown(strings.Join(preamble, "\n"))
	}
	inc.Summary.En = fit.fit("summary", summary, incidentlib.MaxTextLen)

	lessons, n := bodyText(byKey["lessons"])
	notes = append(notes, n...)
	if isPlaceholder(lessons) {
		lessons = ""
	}
	if s := byKey["contributing"]; s != nil {
		var factors []string
		for _, it := range listItems(s.Lines) {
			if footnoteDefRE.MatchString(it) {
				continue
			}
			factors = append(factors, "- "+it)
		}
		if len(factors) > 0 {
			block := "Contributing factors:\n" + strings.Join(factors, "\n")
			if lessons != "" {
				lessons += "\n\n" + block
			} else {
				lessons = block
			}
		}
	}
	inc.Lessons.En = fit.fit("lessons", lessons, incidentlib.MaxTextLen)

	if s := byKey["actions"]; s != nil {
		var items []string
		for _, it := range listItems(s.Lines) {
			if !footnoteDefRE.MatchString(it) && !isPlaceholder(it) {
				items = append(items, it)
			}
		}
		inc.ActionItems = fit.fitItems("action_items", items)
	}

	// Timeline and date.
	var rows []timelineRow
	if s := byKey["timeline"]; s != nil {
		rows = parseTimeline(s)
		var kept []timelineRow
		for _, r := range rows {
			if !isPlaceholder(r.Event) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	for _, r := range rows {
		if r.date != "" && (pmYear == "" || strings.HasPrefix(r.date, pmYear)) {
			if t, err := incidentlib.ParseDate(r.date); err == nil && !t.After(l.now().Add(48*time.Hour)) {
				inc.Date, inc.DateKind = r.date, "incident"
				break
			}
		}
	}
	if inc.Date == "" && len(rows) > 0 {
		rec.Warnings = append(rec.Warnings, "no timeline row has a date in the year of the postmortem id: no date")
	}
	if len(rows) > 0 {
		if len(rows) > incidentlib.MaxListLen {
			rows = rows[:incidentlib.MaxListLen]
		}
		for i := range rows {
			rows[i].Event, _ = truncate(rows[i].Event, incidentlib.MaxItemLen)
			rows[i].Time, _ = truncate(rows[i].Time, 100)
		}
		setExtra(inc, "source_timeline", rows)
		inc.Events = timelineEvents(rows) // sectioned_events.go
	}

	// Stats.
	tags := l.terms.newSet(inc)
	basis := map[string]string{}
	if s := byKey["stats"]; s != nil {
		stats := map[string]string{}
		for _, line := range s.Lines {
			if footnoteDefRE.MatchString(strings.TrimSpace(line)) {
				notes = append(notes, footnoteDefRE.ReplaceAllString(strings.TrimSpace(line), "[$1] $2"))
				continue
			}
			m := statRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			key := strings.ToLower(oneLine(m[1]))
			val := oneLine(footnoteRefRE.ReplaceAllString(m[2], ""))
			if isPlaceholder(val) {
				continue
			}
			stats[key] = val
			switch key {
			case "category", "categories":
				var cats []string
				for _, c := range strings.Split(val, ",") {
					if c = strings.TrimSpace(c); c != "" {
						cats = append(cats, c)
					}
				}
				l.terms.add(tags, "category", cats)
			case "time to detection", "time to detect":
				if d := parseStatDuration(val); d != "" {
					inc.Timeline.DetectedAfter, basis["detected_after"] = d, "stats"
				}
			case "time to recovery", "time to recover", "time to resolution":
				if d := parseStatDuration(val); d != "" {
					inc.Timeline.ResolvedAfter, basis["resolved_after"] = d, "stats"
				}
			}
		}
		if len(stats) > 0 {
			setExtra(inc, "source_stats", stats)
		}
	}
	if inc.Timeline.DetectedAfter == "" || inc.Timeline.ResolvedAfter == "" {
		det, res := deriveTimeline(rows)
		if inc.Timeline.DetectedAfter == "" && det != "" {
			inc.Timeline.DetectedAfter, basis["detected_after"] = det, "timeline table"
		}
		if inc.Timeline.ResolvedAfter == "" && res != "" {
			inc.Timeline.ResolvedAfter, basis["resolved_after"] = res, "timeline table"
		}
	}
	if len(basis) > 0 {
		setExtra(inc, "timeline_basis", basis)
	}
	if len(notes) > 0 {
		for i := range notes {
			notes[i], _ = truncate(notes[i], incidentlib.MaxItemLen)
		}
		setExtra(inc, "source_notes", notes)
	}

	// Source: the file in the collection's repository.
	if u := f.Coll.fileURL(f.Rel); u != "" {
		inc.Sources = []incidentlib.Source{{URL: u, Kind: "postmortem"}}
	}
	if pmID != "" {
		setExtra(inc, "source_id", pmID)
	}

	l.finishRecord(&rec, tags, &fit, f.Coll)
	return []Record{rec}, nil, ""
}

// collectionOrg is the organization whose postmortems a sectioned
// collection holds: the owner of its repository (dfds for
// github.com/dfds/postmortems), else the collection name.
func collectionOrg(c *collection) string {
	if parts := strings.Split(c.Repo, "/"); len(parts) >= 2 && parts[1] != "" {
		return parts[1]
	}
	return c.Name
}
