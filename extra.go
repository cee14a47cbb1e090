package incidentlib

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// The codec of the record types that keep the JSON members they do not
// know in Extra: one UnmarshalJSON, the scan that finds the unknown
// members without decoding the known ones, and the writer that appends
// them in name order.

// onePass turns the one-pass decoder and encoder on (tests compare it with
// encoding/json's path).
var onePass = true

// nullRule says what JSON null decodes to in unmarshalWithExtra.
type nullRule bool

const (
	nullIsZero  nullRule = true  // null is the zero value
	nullIsError nullRule = false // null is not an object: an error
)

// unmarshalWithExtra is the one UnmarshalJSON of the record types that
// keep unknown fields: it decodes data into the wire form W, collects the
// members not in known as Extra, and stores what fromWire makes of both in
// *dst. On an error in the unknown fields, *dst still holds the known
// ones. It reads data in one pass when it can (extra_decode.go), and with
// encoding/json otherwise, which then decides and words any error.
func unmarshalWithExtra[W, T any](data []byte, dst *T, known map[string]bool, null nullRule, fromWire func(W, Extra) T) error {
	var fast T
	if onePass && decodeOnePass(data, &fast, extraDecoderOf(known, null, fromWire)) {
		*dst = fast
		return nil
	}
	if null == nullIsZero && string(data) == "null" {
		var zero T
		*dst = zero
		return nil
	}
	var w W
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	extra, err := extraFields(data, known)
	*dst = fromWire(w, extra)
	return err
}

// KnownMembers returns the member names IL-JSON defines for an object of
// v's type (Incident, Text, Impact, Timeline, Item, Source, Review, OrgRole
// or TextOrigins),
// which are read into its fields; any other member is kept in its Extra.
// It returns nil for other types. The map is shared: do not change it.
func KnownMembers(v any) map[string]bool {
	switch v.(type) {
	case Incident, *Incident:
		return incidentKnown
	case Text, *Text:
		return textKnown
	case Impact, *Impact:
		return impactKnown
	case Timeline, *Timeline:
		return timelineKnown
	case Item, *Item:
		return itemKnown
	case Source, *Source:
		return sourceKnown
	case Review, *Review:
		return reviewKnown
	case OrgRole, *OrgRole:
		return orgRoleKnown
	case TextOrigins, *TextOrigins:
		return textKnown
	case Event, *Event:
		return eventKnown
	}
	return nil
}

// knownFields lists the JSON names of a wire struct's fields (those left
// out when empty too).
func knownFields(v any) map[string]bool {
	t := reflect.TypeOf(v)
	known := make(map[string]bool, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		known[name] = true
	}
	return known
}

// extraFields returns the members of the JSON object data whose names are
// not known, each value as its bytes in data. It returns nil when there
// are none. data is JSON its caller has already decoded (so it is valid);
// extraFields only walks its top-level members, allocating nothing for the
// known ones.
func extraFields(data []byte, known map[string]bool) (Extra, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errors.New("expected a JSON object")
	}
	var extra Extra
	for i++; ; {
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		if i >= len(data) {
			return nil, errMalformedObject
		}
		if data[i] == '}' {
			return extra, nil
		}
		keyStart := i
		keyEnd, plain := endOfString(data, i)
		if keyEnd < 0 {
			return nil, errMalformedObject
		}
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, errMalformedObject
		}
		valStart := skipSpace(data, i+1)
		valEnd := endOfValue(data, valStart)
		if valEnd < 0 {
			return nil, errMalformedObject
		}
		i = valEnd
		var name string
		if key := data[keyStart+1 : keyEnd-1]; plain {
			if known[string(key)] {
				continue
			}
			name = string(key)
		} else if err := json.Unmarshal(data[keyStart:keyEnd], &name); err != nil {
			return nil, err
		} else if known[name] {
			continue
		}
		if extra == nil {
			extra = Extra{}
		}
		extra[name] = append(json.RawMessage(nil), data[valStart:valEnd]...)
	}
}

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
	if i >= len(data) || data[i] != '"' {
		return -1, false
	}
	plain = true
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1, plain
		case c == '\\':
			plain = false
			i++
		case c >= 0x80:
			plain = false
		}
	}
	return -1, false
}

// endOfValue returns the position after the JSON value that starts at i,
// or -1.
func endOfValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		end, _ := endOfString(data, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, _ := endOfString(data, i)
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

// marshalWithExtra writes w as a JSON object followed by the unknown fields
// in name order: in one pass when it can (extra_encode.go), with
// encoding/json otherwise, which then decides and words any error.
func marshalWithExtra(w any, extra Extra) ([]byte, error) {
	if onePass {
		if b, err := appendWire(make([]byte, 0, 1024), reflect.ValueOf(w), extra, false); err == nil {
			return b, nil
		}
	}
	b, err := json.Marshal(w)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for n, k := range names {
		kb, _ := json.Marshal(k)
		if n > 0 || len(b) > 2 {
			buf.WriteByte(',')
		}
		buf.Write(kb)
		buf.WriteByte(':')
		if err := json.Compact(&buf, extra[k]); err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Names returns the member names of the extra fields in order.
func (e Extra) Names() []string {
	if len(e) == 0 {
		return nil
	}
	names := make([]string, 0, len(e))
	for name := range e {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
