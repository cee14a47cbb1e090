package incidentlib

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/incidentlib/incidentlib/iljson"
)

// RecordAt is a record read from a file, with where it was found.
type RecordAt struct {
	Incident *Incident
	// Where is "FILE:LINE" for JSONL, "FILE[INDEX]" for an array, "FILE" for
	// a single object.
	Where string
}

// ReadRecords reads IL-JSON records from data: one JSON object, a JSON
// array of objects, or JSONL (one object per line; blank lines are
// skipped). name is used in error messages. Every problem is reported as an
// EINVALID error that names the file and line or index and, when it is
// known, the record's id.
func ReadRecords(name string, data []byte) ([]RecordAt, error) {
	if off := iljson.InvalidUTF8Offset(data); off >= 0 {
		line := 1 + bytes.Count(data[:off], []byte{'\n'})
		return nil, Errorf(EINVALID, "%s:%d: invalid UTF-8 at byte offset %d", name, line, off)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Errorf(EINVALID, "%s: the file is empty", name)
	}
	var out []RecordAt
	var es Errors
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
			es = append(es, Errorf(EINVALID, "%s%s: %v", where, idHint(r.JSON), err))
			return
		}
		out = append(out, RecordAt{inc, where})
	})
	var se *iljson.SplitError
	switch {
	case errors.As(err, &se) && se.Err == iljson.ErrNoRecords && form == iljson.FormArray:
		// An empty array is an empty import.
	case se != nil && se.Err == iljson.ErrTrailingData:
		es = append(es, Errorf(EINVALID, "%s:%d: unexpected data after the JSON array", name, 1+bytes.Count(data[:se.Offset], []byte{'\n'})))
	case se != nil:
		es = append(es, Errorf(EINVALID, "%s: %s", name, iljson.ErrorWhere(data, se.Err)))
	}
	if len(es) > 0 {
		return nil, es
	}
	if out == nil {
		out = []RecordAt{}
	}
	return out, nil
}

func decodeRecord(raw []byte) (*Incident, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("a record must be a JSON object")
	}
	if err := checkDuplicateKeys(raw); err != nil {
		return nil, err
	}
	var inc Incident
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
		return fmt.Errorf("member %q appears twice in %s", de.Key, pathOr(de.Path))
	case errors.As(err, &je):
		var se *json.SyntaxError
		if errors.As(je.Err, &se) {
			return errors.New(iljson.ErrorWhere(raw, se))
		}
		return je.Err
	}
	return err
}

func pathOr(p string) string {
	if p == "" {
		return "the record"
	}
	return p[1:]
}
