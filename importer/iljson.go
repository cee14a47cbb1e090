package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// parseILJSON reads IL-JSON: one object, an array of objects, or (lines
// true) one object per line. Records keep their ids; a record without
// review.written_by gets "import".
func (l *loader) parseILJSON(f *file, lines bool) ([]Record, []Problem) {
	data := f.Data
	trimmed := bytes.TrimSpace(data)
	if !lines && len(trimmed) > 0 && trimmed[0] == '[' {
		return l.parseILJSONArray(f)
	}
	if !lines {
		// One object; JSON Lines when another value follows it.
		dec := json.NewDecoder(bytes.NewReader(data))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == nil && len(bytes.TrimSpace(data[dec.InputOffset():])) == 0 {
			start := int(dec.InputOffset()) - len(raw)
			rec, prob := l.ilRecord(f, raw, fmt.Sprintf("%s:%d", f.Path, lineOf(data, start)), start)
			if prob != nil {
				return nil, []Problem{*prob}
			}
			return []Record{rec}, nil
		} else if err != nil {
			return nil, []Problem{jsonProblem(f, data, 0, err)}
		}
	}
	var recs []Record
	var probs []Problem
	off := 0
	for n, line := range bytes.Split(data, []byte("\n")) {
		start := off
		off += len(line) + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", f.Path, n+1)
		rec, prob := l.ilRecord(f, line, where, start)
		if prob != nil {
			probs = append(probs, *prob)
			continue
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 && len(probs) == 0 {
		probs = append(probs, Problem{Where: f.Path, Reason: "no records"})
	}
	return recs, probs
}

func (l *loader) parseILJSONArray(f *file) ([]Record, []Problem) {
	data := f.Data
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, []Problem{jsonProblem(f, data, 0, err)}
	}
	var recs []Record
	var probs []Problem
	for i := 0; dec.More(); i++ {
		start := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return recs, append(probs, jsonProblem(f, data, 0, err))
		}
		start += bytes.IndexByte(data[start:], raw[0])
		where := fmt.Sprintf("%s:%d [%d]", f.Path, lineOf(data, start), i)
		rec, prob := l.ilRecord(f, raw, where, start)
		if prob != nil {
			probs = append(probs, *prob)
			continue
		}
		recs = append(recs, rec)
	}
	if _, err := dec.Token(); err != nil {
		probs = append(probs, jsonProblem(f, data, 0, err))
	} else if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		probs = append(probs, Problem{Where: fmt.Sprintf("%s:%d", f.Path, lineOf(data, int(dec.InputOffset()))), Reason: "unexpected data after the JSON array"})
	}
	if len(recs) == 0 && len(probs) == 0 {
		probs = append(probs, Problem{Where: f.Path, Reason: "empty array: no records"})
	}
	return recs, probs
}

// jsonProblem turns a JSON error into a problem naming the line. base is
// the byte offset of the decoded text within data.
func jsonProblem(f *file, data []byte, base int, err error) Problem {
	where := f.Path
	if off := jsonErrorOffset(err); off >= 0 {
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
	id := peekID(raw)
	if err := checkJSONDuplicateKeys(raw); err != nil {
		p := jsonProblem(f, f.Data, start, err)
		p.ID = id
		if i := strings.Index(where, " ["); i >= 0 {
			p.Where += where[i:] // keep the array index
		}
		return Record{}, &p
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Record{}, &Problem{Where: where, ID: id, Reason: "not a JSON object"}
	}
	if err := incidentSchema.checkCase(trimmed, ""); err != nil {
		return Record{}, &Problem{Where: where, ID: id, Reason: err.Error()}
	}
	var inc incidentlib.Incident
	if err := json.Unmarshal(trimmed, &inc); err != nil {
		return Record{}, &Problem{Where: where, ID: id, Reason: "not an IL-JSON record: " + err.Error()}
	}
	if inc.Review.WrittenBy == "" {
		inc.Review.WrittenBy = "import"
	}
	key := f.Coll.Name + "/" + inc.ID
	if inc.ID == "" {
		key = f.Coll.Name + "/" + f.Rel + ":" + strings.TrimPrefix(where, f.Path+":")
	}
	return Record{Incident: &inc, SourceKey: key, Where: where}, nil
}

// peekID returns the "id" member of a JSON object when it is a string.
func peekID(raw []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	s, _ := v.ID.(string)
	return s
}

// hasSecondJSONLine reports whether text holds more than one JSON value,
// the first ending on its own line: JSON Lines.
func hasSecondJSONLine(text []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(text))
	var raw json.RawMessage
	if dec.Decode(&raw) != nil {
		// A broken first line: JSON Lines if the second line starts an object.
		lines := bytes.SplitN(text, []byte("\n"), 3)
		return len(lines) > 1 && bytes.HasPrefix(bytes.TrimSpace(lines[1]), []byte("{"))
	}
	rest := bytes.TrimSpace(text[dec.InputOffset():])
	return len(rest) > 0
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
