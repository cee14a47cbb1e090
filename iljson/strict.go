package iljson

import (
	"unicode/utf16"
	"unicode/utf8"
)

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
