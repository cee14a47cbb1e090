package iljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The one JSON scanner of the program: where a value or a string ends
// (endOfValue, endOfString: loose, for JSON already known to be valid or
// a quick look), the strict reader of the one-pass decoder (decoder), the
// first invalid UTF-8 byte, a record's id and duplicate member names
// (records.go).

var errMalformedObject = errors.New("malformed JSON object")

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the position after the JSON string that starts at
// i, or -1, and whether its bytes are its value: no escapes, only ASCII.
func endOfString(data []byte, i int) (end int, plain bool) {
	end = stringEnd(data, i)
	if end < 0 {
		return -1, false
	}
	for _, c := range data[i+1 : end-1] {
		if c == '\\' || c >= 0x80 {
			return end, false
		}
	}
	return end, true
}

// stringEnd returns the position after the JSON string that starts at i,
// or -1: the first quote not escaped, found a stretch at a time.
func stringEnd(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	for j := i + 1; j <= len(data); {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return -1
		}
		q += j
		e := bytes.IndexByte(data[j:q], '\\')
		if e < 0 {
			return q + 1
		}
		j += e + 2 // past the escape and the byte it escapes
	}
	return -1
}

// endOfValue returns the position after the JSON value that starts at i,
// or -1.
func endOfValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end := stringEnd(data, i)
				if end < 0 {
					return -1
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	start := i
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// MayRepeatKeys reports whether valid JSON data may name a member twice
// in one object: two names with the same bytes, or a name with an
// escape (which may spell another name differently). It is the quick
// answer of CheckDuplicateKeys for JSON known to be valid: false means
// CheckDuplicateKeys finds nothing.
func MayRepeatKeys(data []byte) bool {
	// The names of the open objects, one after another (starts: where
	// each open object's begin), and per open container whether it is an
	// object; on the stack for records of ordinary depth.
	var keysBuf [64][]byte
	var startsBuf [16]int
	var inObjectBuf [32]bool
	keys, starts, inObject := keysBuf[:0], startsBuf[:0], inObjectBuf[:0]
	expectKey := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{':
			starts = append(starts, len(keys))
			inObject = append(inObject, true)
			expectKey = true
		case '[':
			inObject = append(inObject, false)
			expectKey = false
		case '}':
			keys = keys[:starts[len(starts)-1]]
			starts = starts[:len(starts)-1]
			inObject = inObject[:len(inObject)-1]
		case ']':
			inObject = inObject[:len(inObject)-1]
		case ',':
			expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
		case '"':
			j := i + 1
			esc := false
			for ; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					esc = true
					j++
				}
			}
			if expectKey {
				if esc {
					return true
				}
				key := data[i+1 : j]
				for _, k := range keys[starts[len(starts)-1]:] {
					if bytes.Equal(k, key) {
						return true
					}
				}
				keys = append(keys, key)
				expectKey = false
			}
			i = j
		}
	}
	return false
}

// InvalidUTF8Offset returns the byte offset of the first byte of b that
// does not begin a valid UTF-8 sequence, or -1 if b is valid UTF-8. Readers
// of JSON use it to say where a text goes wrong, since encoding/json
// replaces such bytes with U+FFFD without a word.
func InvalidUTF8Offset(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	off := 0
	for off < len(b) {
		r, size := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	return off
}

// PeekID returns the "id" member of a JSON object when it is a string, ""
// otherwise: the name of a record in a message about a record that could
// not be read.
func PeekID(raw []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	s, _ := v.ID.(string)
	return s
}
