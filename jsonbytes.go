package incidentlib

import (
	"encoding/json"
	"unicode/utf8"
)

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
