package model

import (
	"bytes"
	"encoding/json"

	"github.com/incidentlib/incidentlib"
)

// HistoryImportInput is an incident with its history: one line of export
// --history (importIncidents' histories). Its JSON form is that line's,
// but for record, which GraphQL carries as IL-JSON text.
type HistoryImportInput struct {
	ID      string                 `json:"id"`
	History []*HistoryVersionInput `json:"history"`
	// Gaps and Unordered: what the history needs beyond the
	// strictest grammar (incidentlib.HistoryAllowances), as export
	// --history says.
	Gaps      *bool `json:"gaps,omitempty"`
	Unordered *bool `json:"unordered,omitempty"`
}

// HistoryVersionInput is one version of a history import.
type HistoryVersionInput struct {
	Version int      `json:"version"`
	At      string   `json:"at"`
	Author  string   `json:"author"`
	Role    *string  `json:"role,omitempty"`
	Action  string   `json:"action"`
	Changed []string `json:"changed,omitempty"`
	Comment *string  `json:"comment,omitempty"`
	Deleted *bool    `json:"deleted,omitempty"`
	Target  *int     `json:"target,omitempty"`
	Record  *string  `json:"record"`
}

// historyLineVersion is a version as export --history writes it.
type historyLineVersion struct {
	HistoryVersionInput
	Record json.RawMessage `json:"record"`
}

type historyLine struct {
	ID        string               `json:"id"`
	History   []historyLineVersion `json:"history"`
	Gaps      *bool                `json:"gaps,omitempty"`
	Unordered *bool                `json:"unordered,omitempty"`
}

// HistoryInputOf reads one line of export --history as the input that
// imports it.
func HistoryInputOf(line []byte) (*HistoryImportInput, error) {
	var l historyLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, err
	}
	in := &HistoryImportInput{ID: l.ID, History: make([]*HistoryVersionInput, len(l.History)), Gaps: l.Gaps, Unordered: l.Unordered}
	for i, v := range l.History {
		hv := v.HistoryVersionInput
		if r := bytes.TrimSpace(v.Record); len(r) > 0 && string(r) != "null" {
			s := string(r)
			hv.Record = &s
		} else {
			hv.Record = nil
		}
		in.History[i] = &hv
	}
	return in, nil
}

// HistoryLines writes the inputs as export --history lines, the records'
// text as given.
func HistoryLines(ins []*HistoryImportInput) ([]byte, error) {
	var buf bytes.Buffer
	for _, in := range ins {
		l := historyLine{ID: in.ID, History: make([]historyLineVersion, len(in.History)), Gaps: in.Gaps, Unordered: in.Unordered}
		for i, v := range in.History {
			l.History[i] = historyLineVersion{HistoryVersionInput: *v}
			if v.Record != nil {
				if !json.Valid([]byte(*v.Record)) {
					return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"histories", in.ID, "record"},
						"incident %s version %d: record is not JSON text", in.ID, v.Version)
				}
				l.History[i].Record = json.RawMessage(*v.Record)
			}
		}
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}
