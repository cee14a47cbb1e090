// Package iljson is the JSON codec of IL-JSON records: the reflection
// driven decoder and encoder of the record types that keep the members
// they do not know (Extra), the one JSON scanner of the program (value
// ends, strings, UTF-8 offsets, duplicate member names), the splitting of
// an IL-JSON file into records, and the walk of a record's members that
// the record grammar runs.
//
// It is below the domain (the root package incidentlib), which holds the
// wire structs and the rules (which names are reserved, what is a
// duplicate): it knows no record type and imports only the standard
// library. docs/design.md says who imports it.
package iljson

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

// Extra holds the fields of a JSON object that the program does not know,
// by name, as raw JSON.
type Extra map[string]json.RawMessage

// onePass turns the one-pass decoder and encoder on (tests compare it with
// encoding/json's path).
var onePass = true

// NullRule says what JSON null decodes to in Unmarshal.
type NullRule bool

// The NullRules.
const (
	NullIsZero  NullRule = true  // null is the zero value
	NullIsError NullRule = false // null is not an object: an error
)

// Unmarshal is the one UnmarshalJSON of the record types that keep
// unknown fields: it decodes data into the wire form W, collects the
// members not in known as Extra, and stores what fromWire makes of both in
// *dst. On an error in the unknown fields, *dst still holds the known
// ones. It reads data in one pass when it can (decode.go), and with
// encoding/json otherwise, which then decides and words any error.
func Unmarshal[W, T any](data []byte, dst *T, known map[string]bool, null NullRule, fromWire func(W, Extra) T) error {
	var fast T
	if onePass && decodeOnePass(data, &fast, extraDecoderOf(known, null, fromWire)) {
		*dst = fast
		return nil
	}
	if null == NullIsZero && string(data) == "null" {
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

// KnownFields lists the JSON names of a wire struct's fields (those left
// out when empty too).
func KnownFields(v any) map[string]bool {
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

// MarshalWithExtra writes w as a JSON object followed by the unknown fields
// in name order: in one pass when it can (encode.go), with
// encoding/json otherwise, which then decides and words any error.
func MarshalWithExtra(w any, extra Extra) ([]byte, error) {
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
