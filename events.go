package incidentlib

import (
	"fmt"
	"time"

	"github.com/incidentlib/incidentlib/iljson"
)

// Typed event timelines: an incident's events in order, each at a time
// (RFC 3339) where the record states one, or at an offset from the
// incident's start (a timeline duration) where only relative times are
// known, with a kind and a text. IL-JSON: "events": [{"at": ..., "offset":
// ..., "kind": ..., "text": {...}}], left out when there are none.

// EventKind is what an event of a timeline is.
type EventKind string

// The event kinds.
const (
	EventStart        EventKind = "START"
	EventDetected     EventKind = "DETECTED"
	EventEscalated    EventKind = "ESCALATED"
	EventMitigated    EventKind = "MITIGATED"
	EventResolved     EventKind = "RESOLVED"
	EventCommunicated EventKind = "COMMUNICATED"
	EventOther        EventKind = "OTHER"
)

// EventKinds lists every kind in the order of the schema.
var EventKinds = []EventKind{EventStart, EventDetected, EventEscalated, EventMitigated, EventResolved, EventCommunicated, EventOther}

// IsValid reports whether k is one of EventKinds.
func (k EventKind) IsValid() bool {
	for _, v := range EventKinds {
		if k == v {
			return true
		}
	}
	return false
}

// Event is one event of an incident's timeline.
type Event struct {
	// At is when it happened, RFC 3339 with a zone; empty when the record
	// states no absolute time (a time of day without a zone is never
	// given one: it becomes an Offset).
	At string
	// Offset is how long after the incident's start it happened, as a
	// timeline duration ("16h", "2h30m"); empty when not stated.
	Offset string
	Kind   EventKind
	Text   Text
	Extra  Extra
}

type eventJSON struct {
	At     *string   `json:"at"`
	Offset *string   `json:"offset"`
	Kind   EventKind `json:"kind"`
	Text   Text      `json:"text"`
}

var eventKnown = iljson.KnownFields(eventJSON{})

// MarshalJSON writes the event with null for an unknown time or offset.
func (e Event) MarshalJSON() ([]byte, error) {
	return iljson.MarshalWithExtra(eventJSON{strPtr(e.At), strPtr(e.Offset), e.Kind, e.Text}, e.Extra)
}

// UnmarshalJSON reads an event, keeping unknown fields.
func (e *Event) UnmarshalJSON(data []byte) error {
	return iljson.Unmarshal(data, e, eventKnown, iljson.NullIsError, func(w eventJSON, extra Extra) Event {
		return Event{At: strVal(w.At), Offset: strVal(w.Offset), Kind: w.Kind, Text: w.Text, Extra: extra}
	})
}

// EventsStart is the position of the event the others are timed from:
// the first START event, else the first event; -1 without events.
func EventsStart(events []Event) int {
	for k, e := range events {
		if e.Kind == EventStart {
			return k
		}
	}
	if len(events) == 0 {
		return -1
	}
	return 0
}

// EventOffset is how long after the start (EventsStart) event k happened:
// its own offset minus the start's, or, where both have a time, the
// difference of their times. ok is false when neither tells.
func EventOffset(events []Event, k int) (d time.Duration, ok bool) {
	s := EventsStart(events)
	if s < 0 || k < 0 || k >= len(events) {
		return 0, false
	}
	e, start := events[k], events[s]
	if e.Offset != "" {
		eo, err := ParseDuration(e.Offset)
		if err != nil {
			return 0, false
		}
		var so time.Duration
		if start.Offset != "" {
			if so, err = ParseDuration(start.Offset); err != nil {
				return 0, false
			}
		}
		return eo - so, true
	}
	if e.At != "" && start.At != "" {
		ea, err1 := ParseTimestamp(e.At)
		sa, err2 := ParseTimestamp(start.At)
		if err1 == nil && err2 == nil {
			return ea.Sub(sa), true
		}
	}
	return 0, false
}

// validateEvents checks the events: a kind from the list, a time in RFC
// 3339, an offset that is a timeline duration (never negative), times in
// order, and texts as the record's other items.
func (i *Incident) validateEvents(p *problems) {
	if len(i.Events) > MaxEvents {
		p.add(RuleStructure, "events", "events has %d entries, more than the limit of %d", len(i.Events), MaxEvents)
	}
	var last time.Time
	lastAt := -1
	for n, e := range i.Events {
		field := fmt.Sprintf("events.%d", n)
		if !e.Kind.IsValid() {
			p.add(RuleStructure, field+".kind", "events[%d].kind %q is not one of START, DETECTED, ESCALATED, MITIGATED, RESOLVED, COMMUNICATED, OTHER", n, e.Kind)
		}
		if e.Offset != "" {
			if _, err := ParseDuration(e.Offset); err != nil {
				p.add(RuleStructure, field+".offset", "events[%d].offset %s (offsets are durations from the start, never negative)", n, err)
			}
		}
		if e.At != "" {
			t, err := ParseTimestamp(e.At)
			switch {
			case err != nil:
				p.add(RuleStructure, field+".at", "events[%d].at %s", n, err)
			case lastAt >= 0 && t.Before(last):
				p.add(RuleStructure, field+".at", "events[%d].at %s is before events[%d].at %s: events are in order", n, e.At, lastAt, i.Events[lastAt].At)
			default:
				last, lastAt = t, n
			}
		}
		checkText(p, field+".text", e.Text, MaxItemLen, true)
	}
}

// MaxEvents is the most events an incident's timeline may hold.
const MaxEvents = 200

// TimelineDisagreements compares the events with timeline.detected_after
// and resolved_after where both exist: the first DETECTED and the first
// RESOLVED event, timed from the start, must lie within 10% of the
// stated duration. It returns one sentence per disagreement (a warning
// of check, not a reason to refuse a write: accounts round their
// durations).
func (i *Incident) TimelineDisagreements() []string {
	var out []string
	for _, d := range [...]struct {
		field, stated string
		kind          EventKind
	}{{"detected_after", i.Timeline.DetectedAfter, EventDetected}, {"resolved_after", i.Timeline.ResolvedAfter, EventResolved}} {
		if d.stated == "" {
			continue
		}
		want, err := ParseDuration(d.stated)
		if err != nil {
			continue
		}
		for k, e := range i.Events {
			if e.Kind != d.kind {
				continue
			}
			got, ok := EventOffset(i.Events, k)
			if ok {
				diff := got - want
				if diff < 0 {
					diff = -diff
				}
				if float64(diff) > 0.1*float64(want) {
					out = append(out, fmt.Sprintf("timeline.%s is %s but events[%d] (%s) comes %s after the start: more than 10%% apart",
						d.field, d.stated, k, e.Kind, formatOffset(got)))
				}
			}
			break
		}
	}
	return out
}

// formatOffset writes a signed duration in hours and minutes.
func formatOffset(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	return sign + d.Round(time.Minute).String()
}
