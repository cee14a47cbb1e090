package model

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/incidentlib/incidentlib"
)

// TimelineEvent is one event of an incident's typed timeline, with its
// offset from the start worked out once.
type TimelineEvent struct {
	e      *incidentlib.Event
	offset time.Duration
	known  bool // offset is known
	view   *View
}

// Events are the incident's events, in order.
func (i *Incident) Events() []*TimelineEvent {
	evs := i.Inc.Events
	out := make([]*TimelineEvent, len(evs))
	slab := make([]TimelineEvent, len(evs))
	for n := range evs {
		d, ok := incidentlib.EventOffset(evs, n)
		slab[n] = TimelineEvent{e: &evs[n], offset: d, known: ok && d >= 0, view: i.View}
		out[n] = &slab[n]
	}
	return out
}

func (t *TimelineEvent) At() *string { return field(&t.e.At) }

// Offset is the offset in the syntax of timeline durations.
func (t *TimelineEvent) Offset() *string {
	if !t.known {
		return nil
	}
	s := FormatDuration(t.offset)
	return &s
}

// OffsetSeconds is the offset in whole seconds.
func (t *TimelineEvent) OffsetSeconds() *int {
	if !t.known {
		return nil
	}
	n := int(t.offset / time.Second)
	return &n
}

func (t *TimelineEvent) Kind() incidentlib.EventKind { return t.e.Kind }

func (t *TimelineEvent) Text(lang *Lang) *string { return text(&t.e.Text, t.view.lang(lang)) }

// FormatDuration writes d as a timeline duration: hours, minutes and
// seconds, each left out when zero ("75h", "2h30m", "45m", "0m").
func FormatDuration(d time.Duration) string {
	s := int64(d / time.Second)
	h, m, sec := s/3600, s/60%60, s%60
	out := ""
	if h > 0 {
		out += fmt.Sprintf("%dh", h)
	}
	if m > 0 {
		out += fmt.Sprintf("%dm", m)
	}
	if sec > 0 {
		out += fmt.Sprintf("%ds", sec)
	}
	if out == "" {
		return "0m"
	}
	return out
}

// TimelineEventInput is an event of IncidentInput.events.
type TimelineEventInput struct {
	At     string                `json:"at,omitempty"`
	Offset string                `json:"offset,omitempty"`
	Kind   incidentlib.EventKind `json:"kind"`
	Text   *TextInput            `json:"text,omitempty"`
	Extra  json.RawMessage       `json:"extra,omitempty"`
}

// eventsOf converts the events of an input (IncidentInput.Incident).
func eventsOf(list []*TimelineEventInput, text func(*TextInput, string) incidentlib.Text, extra func(json.RawMessage, ...string) incidentlib.Extra) []incidentlib.Event {
	var out []incidentlib.Event
	for n, e := range list {
		out = append(out, incidentlib.Event{At: e.At, Offset: e.Offset, Kind: e.Kind,
			Text: text(e.Text, fmt.Sprintf("events.%d.text", n)), Extra: extra(e.Extra, "events", fmt.Sprint(n))})
	}
	return out
}

// eventInputs is the inverse of eventsOf (InputOf).
func eventInputs(evs []incidentlib.Event, text func(incidentlib.Text) *TextInput) []*TimelineEventInput {
	var out []*TimelineEventInput
	for _, e := range evs {
		out = append(out, &TimelineEventInput{At: e.At, Offset: e.Offset, Kind: e.Kind, Text: text(e.Text), Extra: rawOf(e.Extra)})
	}
	return out
}
