package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
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

// RecordAt is a record read from a file, with where it was found.
type RecordAt struct {
	Incident *incidentlib.Incident
	// Where is "FILE:LINE" for JSONL, "FILE[INDEX]" for an array, "FILE" for
	// a single object.
	Where string
}

// ReadRecords is the reader of IL-JSON files outside an import (the seeds,
// and tests that read an export back): it reads IL-JSON records from data: one JSON object, a JSON
// array of objects, or JSONL (one object per line; blank lines are
// skipped). name is used in error messages. Every problem is reported as an
// incidentlib.EINVALID error that names the file and line or index and, when it is
// known, the record's id.
func ReadRecords(name string, data []byte) ([]RecordAt, error) {
	if off := iljson.InvalidUTF8Offset(data); off >= 0 {
		line := 1 + bytes.Count(data[:off], []byte{'\n'})
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "%s:%d: invalid UTF-8 at byte offset %d", name, line, off)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "%s: the file is empty", name)
	}
	var out []RecordAt
	var es incidentlib.Errors
	form, err := iljson.SplitRecords(data, false, func(r iljson.RawRecord) {
		var where string
		switch {
		case r.Index >= 0:
			where = fmt.Sprintf("%s[%d]", name, r.Index)
		case r.Form == iljson.FormLines:
			where = fmt.Sprintf("%s:%d", name, r.Line)
		default:
			where = name
		}
		inc, err := decodeRecord(r.JSON)
		if err != nil {
			es = append(es, incidentlib.Errorf(incidentlib.EINVALID, "%s%s: %v", where, idHint(r.JSON), err))
			return
		}
		out = append(out, RecordAt{inc, where})
	})
	var se *iljson.SplitError
	switch {
	case errors.As(err, &se) && se.Err == iljson.ErrNoRecords && form == iljson.FormArray:
		// An empty array is an empty import.
	case se != nil && se.Err == iljson.ErrTrailingData:
		es = append(es, incidentlib.Errorf(incidentlib.EINVALID, "%s:%d: unexpected data after the JSON array", name, 1+bytes.Count(data[:se.Offset], []byte{'\n'})))
	case se != nil:
		es = append(es, incidentlib.Errorf(incidentlib.EINVALID, "%s: %s", name, iljson.ErrorWhere(data, se.Err)))
	}
	if len(es) > 0 {
		return nil, es
	}
	if out == nil {
		out = []RecordAt{}
	}
	return out, nil
}

func decodeRecord(raw []byte) (*incidentlib.Incident, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("a record must be a JSON object")
	}
	if err := checkDuplicateKeys(raw); err != nil {
		return nil, err
	}
	var inc incidentlib.Incident
	if err := json.Unmarshal(raw, &inc); err != nil {
		return nil, errors.New(iljson.ErrorWhere(raw, err))
	}
	return &inc, nil
}

// idHint returns " (id IL-…)" when the raw record has a readable id.
func idHint(raw []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &v) == nil {
		if s, ok := v.ID.(string); ok && s != "" {
			return " (id " + s + ")"
		}
		return ""
	}
	// Broken JSON: the id may still be readable.
	if m := idRE.FindSubmatch(raw); m != nil {
		return " (id " + string(m[1]) + ")"
	}
	return ""
}

var idRE = regexp.MustCompile(`"id"\s*:\s*"(IL-[0-9]{1,12})"`)

// checkDuplicateKeys rejects an object that names a member twice, at any
// depth: encoding/json would silently keep the last one.
func checkDuplicateKeys(raw []byte) error {
	err := iljson.CheckDuplicateKeys(raw)
	var de *iljson.DuplicateKeyError
	var je *iljson.JSONError
	switch {
	case errors.As(err, &de):
		return fmt.Errorf("member %q appears twice in %s", de.Key, duplicatePath(de.Path))
	case errors.As(err, &je):
		var se *json.SyntaxError
		if errors.As(je.Err, &se) {
			return errors.New(iljson.ErrorWhere(raw, se))
		}
		return je.Err
	}
	return err
}

// duplicatePath is a DuplicateKeyError's path as a message says it.
func duplicatePath(p string) string {
	if p == "" {
		return "the record"
	}
	return p[1:]
}
