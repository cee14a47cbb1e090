package incidentlib

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"unicode/utf8"
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
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		line := 1 + bytes.Count(data[:off], []byte{'\n'})
		return nil, Errorf(EINVALID, "%s:%d: invalid UTF-8 at byte offset %d", name, line, off)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, Errorf(EINVALID, "%s: the file is empty", name)
	}
	if trimmed[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, Errorf(EINVALID, "%s: %s", name, jsonErrorWhere(trimmed, err))
		}
		out := make([]RecordAt, 0, len(raws))
		var es Errors
		for n, raw := range raws {
			where := fmt.Sprintf("%s[%d]", name, n)
			inc, err := decodeRecord(raw)
			if err != nil {
				es = append(es, Errorf(EINVALID, "%s%s: %v", where, idHint(raw), err))
				continue
			}
			out = append(out, RecordAt{inc, where})
		}
		if len(es) > 0 {
			return nil, es
		}
		return out, nil
	}
	// One object spanning the whole file, or JSONL.
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var first json.RawMessage
	if err := dec.Decode(&first); err == nil && !dec.More() {
		inc, err := decodeRecord(first)
		if err != nil {
			return nil, Errorf(EINVALID, "%s%s: %v", name, idHint(first), err)
		}
		return []RecordAt{{inc, name}}, nil
	}
	var out []RecordAt
	var es Errors
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		inc, err := decodeRecord(b)
		if err != nil {
			es = append(es, Errorf(EINVALID, "%s%s: %v", where, idHint(b), err))
			continue
		}
		out = append(out, RecordAt{inc, where})
	}
	if err := sc.Err(); err != nil {
		es = append(es, Errorf(EINVALID, "%s:%d: %v", name, line+1, err))
	}
	if len(es) > 0 {
		return nil, es
	}
	return out, nil
}

// ReadRecordsFrom reads all of r and calls ReadRecords.
func ReadRecordsFrom(name string, r io.Reader) ([]RecordAt, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return ReadRecords(name, data)
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
		return nil, errors.New(jsonErrorWhere(raw, err))
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

func jsonErrorWhere(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d (line %d): %v", se.Offset, 1+bytes.Count(data[:min(int(se.Offset), len(data))], []byte{'\n'}), se)
	case errors.As(err, &te):
		return fmt.Sprintf("field %s: expected %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

// checkDuplicateKeys rejects an object that names a member twice, at any
// depth: encoding/json would silently keep the last one.
func checkDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if seen[k] {
					return fmt.Errorf("member %q appears twice in %s", k, pathOr(path))
				}
				seen[k] = true
				if err := walk(path + "." + k); err != nil {
					return err
				}
			}
		case '[':
			for n := 0; dec.More(); n++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, n)); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // closing delimiter
		return err
	}
	if err := walk(""); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return errors.New(jsonErrorWhere(raw, err))
		}
		return err
	}
	return nil
}

func pathOr(p string) string {
	if p == "" {
		return "the record"
	}
	return p[1:]
}
