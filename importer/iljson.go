package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// parseILJSON reads IL-JSON: one object, an array of objects, or (lines
// true) one object per line, split by iljson.SplitRecords. Records
// are kept as written, ids and review included: written_by null stays null,
// so export, import, export is byte-identical.
func (l *loader) parseILJSON(f *file, lines bool) ([]Record, []Problem) {
	var recs []Record
	var probs []Problem
	form, err := iljson.SplitRecords(f.Data, lines, func(r iljson.RawRecord) {
		where := fmt.Sprintf("%s:%d", f.Path, r.Line)
		if r.Index >= 0 {
			where += fmt.Sprintf(" [%d]", r.Index)
		}
		rec, prob := l.ilRecord(f, r.JSON, where, r.Offset)
		if prob != nil {
			probs = append(probs, *prob)
			return
		}
		recs = append(recs, rec)
	})
	var se *iljson.SplitError
	if errors.As(err, &se) {
		switch {
		case se.Err == iljson.ErrNoRecords && form == iljson.FormArray:
			probs = append(probs, Problem{Where: f.Path, Reason: "empty array: no records"})
		case se.Err == iljson.ErrNoRecords:
			probs = append(probs, Problem{Where: f.Path, Reason: "no records"})
		case se.Err == iljson.ErrTrailingData:
			probs = append(probs, Problem{Where: fmt.Sprintf("%s:%d", f.Path, lineOf(f.Data, se.Offset)), Reason: "unexpected data after the JSON array"})
		default:
			probs = append(probs, jsonProblem(f, f.Data, 0, se.Err))
		}
	}
	return recs, probs
}

// jsonProblem turns a JSON error into a problem naming the line. base is
// the byte offset of the decoded text within data.
func jsonProblem(f *file, data []byte, base int, err error) Problem {
	where := f.Path
	if off := iljson.ErrorOffset(err); off >= 0 {
		where = fmt.Sprintf("%s:%d", f.Path, lineOf(data, base+int(off)))
	} else if errors.Is(err, io.ErrUnexpectedEOF) {
		where = fmt.Sprintf("%s:%d", f.Path, lineOf(data, len(bytes.TrimRight(data, " \t\r\n"))))
	}
	if strings.HasPrefix(err.Error(), "duplicate key") {
		return Problem{Where: where, Reason: err.Error()}
	}
	return Problem{Where: where, Reason: "malformed JSON: " + err.Error()}
}

// ilRecord reads one IL-JSON object that starts at byte start of the file.
func (l *loader) ilRecord(f *file, raw []byte, where string, start int) (Record, *Problem) {
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		// The fast path (fastcheck.go): the checks below would pass.
		if inc, err := decodeObject(t); err == nil && !iljson.MayRepeatKeys(t) && !caseSuspect(inc) {
			return l.ilResult(f, inc, where), nil
		}
	}
	id := func() string { return iljson.PeekID(raw) } // only for problems: it decodes
	if err := checkJSONDuplicateKeys(raw); err != nil {
		p := jsonProblem(f, f.Data, start, err)
		p.ID = id()
		if i := strings.Index(where, " ["); i >= 0 {
			p.Where += where[i:] // keep the array index
		}
		return Record{}, &p
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Record{}, &Problem{Where: where, ID: id(), Reason: "not a JSON object"}
	}
	if err := incidentSchema.checkCase(trimmed, ""); err != nil {
		return Record{}, &Problem{Where: where, ID: id(), Reason: err.Error()}
	}
	inc, err := decodeIL(trimmed)
	if err != nil {
		return Record{}, &Problem{Where: where, ID: id(), Reason: "not an IL-JSON record: " + err.Error()}
	}
	return l.ilResult(f, inc, where), nil
}

func (l *loader) ilResult(f *file, inc *incidentlib.Incident, where string) Record {
	key := f.Coll.Name + "/" + inc.ID
	if inc.ID == "" {
		key = f.Coll.Name + "/" + f.Rel + ":" + strings.TrimPrefix(where, f.Path+":")
	}
	return Record{Incident: inc, SourceKey: key, Where: where}
}

// decodeIL decodes one IL-JSON object that passed ilRecord's checks; its
// review is kept as written (written_by null stays null).
func decodeIL(trimmed []byte) (*incidentlib.Incident, error) {
	inc := new(incidentlib.Incident)
	if err := json.Unmarshal(trimmed, inc); err != nil {
		return nil, err
	}
	return inc, nil
}

// decodeObject is decodeIL for text that starts with '{' (and has no
// space around it), without json.Unmarshal's own scan of the whole text
// before it hands the text to Incident.UnmarshalJSON, which scans it again:
// it accepts the same texts and decodes them to the same record. Its
// errors may be worded otherwise: only the fast paths use it, and a record
// it refuses takes the slow path, which reports decodeIL's error.
func decodeObject(trimmed []byte) (*incidentlib.Incident, error) {
	inc := new(incidentlib.Incident)
	if err := inc.UnmarshalJSON(trimmed); err != nil {
		return nil, err
	}
	return inc, nil
}

// looksLikeJSONList reports whether a JSON array holds macintux entries:
// objects with "url" and "domain" or "keywords" and no IL-JSON "org" or
// "title".
func looksLikeJSONList(text []byte) bool {
	var list []map[string]json.RawMessage
	if json.Unmarshal(text, &list) != nil {
		// Malformed: decide by the first object's members.
		s := string(text[:min(len(text), 2000)])
		return strings.Contains(s, `"domain"`) && strings.Contains(s, `"url"`) && !strings.Contains(s, `"org"`)
	}
	if len(list) == 0 {
		return false
	}
	for _, m := range list {
		_, hasURL := m["url"]
		_, hasDomain := m["domain"]
		_, hasKeywords := m["keywords"]
		_, hasOrg := m["org"]
		_, hasTitle := m["title"]
		if hasURL && (hasDomain || hasKeywords) && !hasOrg && !hasTitle {
			return true
		}
	}
	return false
}
