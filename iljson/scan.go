package iljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf16"
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

// The scanner of the one-pass decoder (decode.go): strict JSON, read in
// place.

// decoder reads JSON text from data at i.
type decoder struct {
	data []byte
	i    int
	// text is data as one string, made at the first string value: the
	// strings without escapes are parts of it, one allocation for all.
	text string
}

// maxDepth is the deepest nesting the decoder reads itself.
const maxDepth = 200

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// literal consumes lit if it is next.
func (d *decoder) literal(lit string) bool {
	if len(d.data)-d.i >= len(lit) && string(d.data[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// key reads a member name: plain ASCII only (no escapes). The name is a
// part of data.
func (d *decoder) key() ([]byte, bool) {
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return nil, false
	}
	for j := d.i + 1; j < len(d.data); j++ {
		c := d.data[j]
		if c == '"' {
			name := d.data[d.i+1 : j]
			d.i = j + 1
			return name, true
		}
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return nil, false
		}
	}
	return nil, false
}

// str reads a JSON string and returns its value. It refuses invalid UTF-8
// and lone surrogates (which encoding/json replaces with U+FFFD).
func (d *decoder) str() (string, bool) {
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	ascii := true
	j := start
	for ; j < len(d.data); j++ {
		c := d.data[j]
		if c == '"' {
			break
		}
		if c == '\\' {
			return d.unescape(start)
		}
		if c < 0x20 {
			return "", false
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	if j >= len(d.data) {
		return "", false
	}
	if !ascii && !utf8.Valid(d.data[start:j]) {
		return "", false
	}
	if d.text == "" {
		d.text = string(d.data)
	}
	d.i = j + 1
	return d.text[start:j], true
}

// unescape reads a string with escapes that starts at start.
func (d *decoder) unescape(start int) (string, bool) {
	buf := make([]byte, 0, 64)
	j := start
	for j < len(d.data) {
		c := d.data[j]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return "", false
			}
			d.i = j + 1
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= len(d.data) {
			return "", false
		}
		switch e := d.data[j+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(d.data, j+2)
			if !ok {
				return "", false
			}
			j += 6
			if utf16.IsSurrogate(r) {
				if j+1 >= len(d.data) || d.data[j] != '\\' || d.data[j+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(d.data, j+2)
				if !ok {
					return "", false
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					return "", false
				}
				j += 6
			}
			buf = utf8.AppendRune(buf, r)
			continue
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// next moves past what follows a member or an element, after the space:
// a comma and the space after it (done false: more is to come) or end,
// the container's closing byte (done true). ok is false when neither is
// there.
func (d *decoder) next(end byte) (done, ok bool) {
	d.space()
	if d.i >= len(d.data) {
		return false, false
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		d.space()
		return false, true
	case end:
		d.i++
		return true, true
	}
	return false, false
}

// skip moves past one JSON value, checking it strictly.
func (d *decoder) skip(depth int) bool {
	if d.i >= len(d.data) || depth > maxDepth {
		return false
	}
	switch c := d.data[d.i]; {
	case c == '"':
		return d.skipString()
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		d.i++
		d.space()
		if d.i < len(d.data) && d.data[d.i] == end {
			d.i++
			return true
		}
		for {
			if c == '{' {
				if d.i >= len(d.data) || d.data[d.i] != '"' || !d.skipString() {
					return false
				}
				d.space()
				if d.i >= len(d.data) || d.data[d.i] != ':' {
					return false
				}
				d.i++
				d.space()
			}
			if !d.skip(depth + 1) {
				return false
			}
			if done, ok := d.next(end); !ok || done {
				return ok
			}
		}
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	default:
		return d.number()
	}
}

// skipString moves past a string, checking its escapes and UTF-8.
func (d *decoder) skipString() bool {
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(d.data[start:j]) {
				return false
			}
			d.i = j + 1
			return true
		case c == '\\':
			if j+1 >= len(d.data) {
				return false
			}
			switch d.data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := hex4(d.data, j+2); !ok {
					return false
				}
				j += 5
			default:
				return false
			}
		case c < 0x20:
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return false
}

// number moves past a JSON number, in JSON's grammar.
func (d *decoder) number() bool {
	b, i := d.data, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return true
}
