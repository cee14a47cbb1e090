package iljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// RecordsForm is how an IL-JSON file holds its records.
type RecordsForm int

// The forms of an IL-JSON file.
const (
	FormObject RecordsForm = iota // one JSON object
	FormArray                     // a JSON array of objects
	FormLines                     // JSON Lines: one object per line
)

// RawRecord is the JSON text of one record of an IL-JSON file, before it
// is decoded, and where it stands in the file.
type RawRecord struct {
	JSON   []byte // the record's bytes, without surrounding space; a sub-slice of the file
	Offset int    // byte offset of JSON's first byte in the file
	Line   int    // the line JSON starts on, from 1
	Index  int    // its position in a JSON array, or -1
	Form   RecordsForm
}

// SplitError is a problem with an IL-JSON file as a whole rather than with
// one of its records.
type SplitError struct {
	// Offset is the byte offset in the file where the problem was found:
	// for a decoder error, where the JSON breaks (the end of the file's
	// text when it ends too soon).
	Offset int
	// Err is encoding/json's error (a *json.SyntaxError or
	// io.ErrUnexpectedEOF), ErrTrailingData or ErrNoRecords.
	Err error
}

func (e *SplitError) Error() string { return e.Err.Error() }
func (e *SplitError) Unwrap() error { return e.Err }

// Errors of SplitRecords.
var (
	ErrTrailingData = errors.New("unexpected data after the JSON array")
	ErrNoRecords    = errors.New("no records")
)

// SplitRecords is the one reader of IL-JSON's framing. It splits data into
// records and calls each with every one of them, in order, leaving the
// decoding of a record to the caller. data is a JSON array of records, one
// object, or JSON Lines (one object per line, blank lines skipped); lines
// true says it is JSON Lines. Otherwise it is JSON Lines when a second
// value follows the first, or when the first does not parse and the
// second line starts an object.
//
// It returns the form it read and a *SplitError for a problem with the
// file as a whole: an array or single object that does not parse (the
// records before the break have been passed to each), data after an
// array, or no record at all.
func SplitRecords(data []byte, lines bool, each func(RawRecord)) (RecordsForm, error) {
	start := skipSpace(data, 0)
	if !lines && start < len(data) && data[start] == '[' {
		return FormArray, splitArray(data, each)
	}
	if !lines {
		raw, end, err := firstValue(data)
		if !isJSONLines(data, end, err) {
			if err != nil {
				return FormObject, splitError(data, err)
			}
			off := end - len(raw)
			each(RawRecord{JSON: raw, Offset: off, Line: lineAt(data, off), Index: -1, Form: FormObject})
			return FormObject, nil
		}
	}
	n, line, off := 0, 0, 0
	for len(data[off:]) > 0 {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off
		}
		first := skipSpace(data[:end], off)
		if b := bytes.TrimRight(data[first:end], " \t\r\n"); len(b) > 0 {
			each(RawRecord{JSON: b, Offset: first, Line: line, Index: -1, Form: FormLines})
			n++
		}
		off = end + 1
		if off > len(data) {
			break
		}
	}
	if n == 0 {
		return FormLines, &SplitError{Offset: -1, Err: ErrNoRecords}
	}
	return FormLines, nil
}

func splitArray(data []byte, each func(RawRecord)) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return splitError(data, err)
	}
	line, lineOff := 1, 0
	n := 0
	for ; dec.More(); n++ {
		start := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return splitError(data, err)
		}
		start += bytes.IndexByte(data[start:], raw[0])
		line += bytes.Count(data[lineOff:start], []byte{'\n'})
		lineOff = start
		each(RawRecord{JSON: raw, Offset: start, Line: line, Index: n, Form: FormArray})
	}
	if _, err := dec.Token(); err != nil {
		return splitError(data, err)
	}
	if end := int(dec.InputOffset()); len(bytes.TrimSpace(data[end:])) > 0 {
		return &SplitError{Offset: end, Err: ErrTrailingData}
	}
	if n == 0 {
		return &SplitError{Offset: -1, Err: ErrNoRecords}
	}
	return nil
}

// splitError places a decoder error: at the offset a syntax error names,
// or at the end of the text when it ends too soon.
func splitError(data []byte, err error) *SplitError {
	off := int(ErrorOffset(err))
	if off < 0 && errors.Is(err, io.ErrUnexpectedEOF) {
		off = len(bytes.TrimRight(data, " \t\r\n"))
	}
	return &SplitError{Offset: off, Err: err}
}

// ErrorOffset returns the byte offset a JSON error names (a
// *json.SyntaxError, *json.UnmarshalTypeError, *DuplicateKeyError or
// *JSONError), or -1.
func ErrorOffset(err error) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var de *DuplicateKeyError
	var je *JSONError
	switch {
	case errors.As(err, &de):
		return de.Offset
	case errors.As(err, &je):
		return je.Offset
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	return -1
}

// IsJSONLines reports whether data, which does not start with an array,
// is JSON Lines rather than one object: a second value follows the first,
// or the first does not parse and the second line starts an object.
func IsJSONLines(data []byte) bool {
	_, end, err := firstValue(data)
	return isJSONLines(data, end, err)
}

// firstValue reads the first JSON value of data and returns it and the
// offset after it.
func firstValue(data []byte) (json.RawMessage, int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	err := dec.Decode(&raw)
	return raw, int(dec.InputOffset()), err
}

func isJSONLines(data []byte, end int, err error) bool {
	if err == nil {
		return len(bytes.TrimSpace(data[end:])) > 0
	}
	lines := bytes.SplitN(bytes.TrimLeft(data, " \t\r\n"), []byte("\n"), 3)
	return len(lines) > 1 && bytes.HasPrefix(bytes.TrimSpace(lines[1]), []byte("{"))
}

func lineAt(data []byte, off int) int {
	return 1 + bytes.Count(data[:min(off, len(data))], []byte{'\n'})
}

// ErrorWhere words encoding/json's error err about data, saying where a
// syntax error is (byte offset and line) and which field a type error is
// in.
func ErrorWhere(data []byte, err error) string {
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

// DuplicateKeyError is a JSON object that names a member twice.
type DuplicateKeyError struct {
	Key    string
	Path   string // the object's path: "" at the top, then ".member" and "[index]" steps
	Offset int64  // byte offset of the second name
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q in a JSON object", e.Key)
}

// Steps returns the steps of the object's path (".a[2].b": a, 2, b).
func (e *DuplicateKeyError) Steps() []string {
	s := e.Path
	var out []string
	for s != "" {
		switch s[0] {
		case '.':
			end := strings.IndexAny(s[1:], ".[")
			if end < 0 {
				end = len(s) - 1
			}
			out = append(out, s[1:1+end])
			s = s[1+end:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return append(out, s)
			}
			out = append(out, s[1:end])
			s = s[end+1:]
		default:
			return append(out, s)
		}
	}
	return out
}

// JSONError is JSON that does not parse, at a byte offset of the input.
type JSONError struct {
	Offset int64 // where the decoder stopped; the end of the input when it ends inside a value
	Err    error // encoding/json's error; io.EOF when the input ends inside a value
}

func (e *JSONError) Error() string { return e.Err.Error() }
func (e *JSONError) Unwrap() error { return e.Err }

// CheckDuplicateKeys is the one duplicate-key check of the program:
// encoding/json keeps the last of two members with one name, silently.
// It reads the first JSON value of data (what follows it is the caller's)
// and returns a *DuplicateKeyError for the first object, at any depth,
// that names a member twice, a *JSONError where the value does not parse,
// and nil otherwise, also for data that holds no value.
func CheckDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object    bool
		expectKey bool
		key       string // the member being read
		index     int    // the element being read
		keys      map[string]bool
	}
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 {
			if top := &stack[n-1]; top.object {
				top.expectKey = true
			} else {
				top.index++
			}
		}
	}
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) > 0 {
				return &JSONError{Offset: int64(len(data)), Err: io.EOF}
			}
			return nil
		}
		if err != nil {
			at := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				at = se.Offset
			}
			return &JSONError{Offset: at, Err: err}
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = &stack[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.expectKey = false
				}
				if t == '{' {
					stack = append(stack, frame{object: true, expectKey: true, keys: map[string]bool{}})
				} else {
					stack = append(stack, frame{})
				}
			case '}', ']':
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if top != nil && top.object && top.expectKey {
				if top.keys[t] {
					var path strings.Builder
					for _, f := range stack[:len(stack)-1] {
						if f.object {
							path.WriteString("." + f.key)
						} else {
							fmt.Fprintf(&path, "[%d]", f.index)
						}
					}
					return &DuplicateKeyError{Key: t, Path: path.String(), Offset: keyOffset(data, off)}
				}
				top.keys[t] = true
				top.key = t
				top.expectKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

// keyOffset moves off past separators to the start of the key it precedes.
func keyOffset(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}
