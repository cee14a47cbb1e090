package importer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
)

// The Timeline section of a sectioned (dfds) record and the durations
// derived from it and from the statistics section.

// timelineRow is one row of a Timeline table.
type timelineRow struct {
	Time  string    `json:"time"`
	Event string    `json:"event"`
	date  string    // YYYY-MM-DD when the time cell starts with a date
	at    time.Time // zero unless the cell has a date and a clock time
	line  int
}

// parseTimeline reads the rows of the first table of a Timeline section.
func parseTimeline(s *section) []timelineRow {
	var rows []timelineRow
	header := true
	for i, line := range s.Lines {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "|") {
			if len(rows) > 0 || !header {
				if t == "" {
					continue
				}
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(t, "|"), "|")
		if header {
			header = false // the header row
			continue
		}
		if len(cells) > 0 && strings.Trim(strings.TrimSpace(cells[0]), ":-") == "" && strings.Contains(cells[0], "-") {
			continue // the delimiter row
		}
		if len(cells) < 2 {
			continue
		}
		r := timelineRow{Time: oneLine(cells[0]), Event: cleanMarkdown(oneLine(strings.Join(cells[1:], "|"))), line: s.Start + i}
		if m := rowDateRE.FindStringSubmatch(strings.TrimRight(r.Time, "~ ")); m != nil {
			if _, err := incidentlib.ParseDate(m[1]); err == nil {
				r.date = m[1]
				if m[2] != "" {
					hh, _ := strconv.Atoi(m[2])
					if at, err := time.Parse("2006-01-02 15:04", fmt.Sprintf("%s %02d:%s", m[1], hh, m[3])); err == nil {
						r.at = at
					}
				}
			}
		}
		if r.Time == "" && r.Event == "" {
			continue
		}
		rows = append(rows, r)
	}
	return rows
}

var (
	detectWordsRE  = regexp.MustCompile(`(?i)\b(detection:|detected|alerted|alerts?\b|warning|reported|reports of|notified|noticed|became aware|discovered)`)
	recoverWordsRE = regexp.MustCompile(`(?i)\b(recovery:|resolved|resolution:|restored|recovered|operational|back to normal|working again|confirmed working|problem was solved|fully functional)`)
)

// deriveTimeline finds detection and recovery in the rows: the first row
// marked as detection (an explicit "Detection:" first, else words such as
// "alert" or "reported") and the last marked as recovery, each measured
// from the first row with a clock time.
func deriveTimeline(rows []timelineRow) (detected, resolved string) {
	var start time.Time
	for _, r := range rows {
		if !r.at.IsZero() {
			start = r.at
			break
		}
	}
	if start.IsZero() {
		return "", ""
	}
	// The row findRow picks (sectioned_events.go), by its time.
	find := func(re *regexp.Regexp, explicit string, last bool) time.Time {
		if k := findRow(rows, start, re, explicit, last); k >= 0 {
			return rows[k].at
		}
		return time.Time{}
	}
	// A detection in the first row says nothing about when the incident
	// began, so it gives no duration.
	if t := find(detectWordsRE, "detection:", false); !t.IsZero() && t.After(start) {
		detected = formatDuration(t.Sub(start))
	}
	if t := find(recoverWordsRE, "recovery:", true); !t.IsZero() && t.After(start) {
		resolved = formatDuration(t.Sub(start))
	}
	return detected, resolved
}

// parseStatDuration reads "5 minutes", "19 hours 43 minutes.", "11 Days",
// "279 minutes [^3]"; "" for "N/A", "?" and anything without a number and
// unit.
func parseStatDuration(s string) string {
	s = footnoteRefRE.ReplaceAllString(s, "")
	var total time.Duration
	found := false
	for _, m := range durPartRE.FindAllStringSubmatch(s, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || v > 1e6 {
			return ""
		}
		unit := time.Minute
		switch u := strings.ToLower(m[2]); {
		case strings.HasPrefix(u, "d"):
			unit = 24 * time.Hour
		case strings.HasPrefix(u, "h"):
			unit = time.Hour
		case strings.HasPrefix(u, "s"):
			unit = time.Second
		}
		total += time.Duration(v * float64(unit))
		found = true
	}
	if !found {
		return ""
	}
	return formatDuration(total)
}
