package importer

import (
	"regexp"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
)

// The rows of a sectioned (dfds) Timeline table as typed events. The
// tables give times without a zone (a header may name one, a cell never
// does), so no event gets an absolute time: each row with a date and a
// clock time gets its offset from the first such row, and rows without
// one get none. The table itself stays in extra.source_timeline.

var (
	mitigateWordsRE    = regexp.MustCompile(`(?i)\b(mitigat\w*|workaround|rolled back|roll(?:ed|ing)? back|rollback|failover|failed over|reverted|scaled up)`)
	escalateWordsRE    = regexp.MustCompile(`(?i)\b(escalat\w*|paged|on-call|incident (?:was )?declared|major incident)`)
	communicateWordsRE = regexp.MustCompile(`(?i)\b(communicat\w*|status ?page|informed|announced|notif(?:y|ied) (?:customers|users)|customers were told|post(?:ed)? an update)`)
)

// timelineEvents maps rows to events: the first row with a clock time is
// the START; the detection and recovery rows deriveTimeline measures are
// DETECTED and RESOLVED; other rows are MITIGATED, ESCALATED or
// COMMUNICATED by their words, else OTHER.
func timelineEvents(rows []timelineRow) []incidentlib.Event {
	start := -1
	for k, r := range rows {
		if !r.at.IsZero() {
			start = k
			break
		}
	}
	detected, resolved := -1, -1
	if start >= 0 {
		detected = findRow(rows, rows[start].at, detectWordsRE, "detection:", false)
		resolved = findRow(rows, rows[start].at, recoverWordsRE, "recovery:", true)
	}
	out := make([]incidentlib.Event, 0, len(rows))
	for k, r := range rows {
		e := incidentlib.Event{Kind: incidentlib.EventOther, Text: incidentlib.Text{En: r.Event}}
		if start >= 0 && !r.at.IsZero() && !r.at.Before(rows[start].at) {
			e.Offset = formatDuration(r.at.Sub(rows[start].at))
			if e.Offset == "" {
				e.Offset = "0m"
			}
		}
		switch {
		case k == start:
			e.Kind = incidentlib.EventStart
		case k == detected:
			e.Kind = incidentlib.EventDetected
		case k == resolved:
			e.Kind = incidentlib.EventResolved
		case mitigateWordsRE.MatchString(r.Event):
			e.Kind = incidentlib.EventMitigated
		case escalateWordsRE.MatchString(r.Event):
			e.Kind = incidentlib.EventEscalated
		case communicateWordsRE.MatchString(r.Event):
			e.Kind = incidentlib.EventCommunicated
		}
		out = append(out, e)
	}
	return out
}

// findRow is the row deriveTimeline measures for re: the first (or, with
// last, the last) row at or after start whose event has the explicit
// marker, else whose words match; -1 when none does.
func findRow(rows []timelineRow, start time.Time, re *regexp.Regexp, explicit string, last bool) int {
	for _, pass := range []bool{true, false} {
		hit := -1
		for k, r := range rows {
			if r.at.IsZero() || r.at.Before(start) {
				continue
			}
			ok := strings.Contains(strings.ToLower(r.Event), explicit)
			if !pass {
				ok = re.MatchString(r.Event)
			}
			if ok {
				hit = k
				if !last {
					return hit
				}
			}
		}
		if hit >= 0 {
			return hit
		}
	}
	return -1
}
