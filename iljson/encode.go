package iljson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// The one-pass encoder of the record types that keep unknown members: the
// other half of decode.go. encoding/json writes a record's wire
// struct, calls the MarshalJSON of each nested record type (Text, Item,
// ...), which runs encoding/json again, and then scans what each returned
// to check and compact it. This encoder writes the whole record in one
// pass, following the wire structs' fields and json tags by reflection (a
// plan per type, made once), so a new field needs nothing here; values of
// a type it does not write itself go through encoding/json, value by
// value. Its output is byte for byte encoding/json's (a test compares
// them); where it is not sure, the caller takes encoding/json's path.

// WireForm is a record type written as its wire struct followed by its
// unknown members: its MarshalJSON is Marshal. The encoder writes one
// met inside another wire struct in place, without calling MarshalJSON.
type WireForm interface {
	Wire() (w any, extra Extra)
}

// Marshal is the MarshalJSON of a WireForm.
func Marshal(v WireForm) ([]byte, error) {
	w, extra := v.Wire()
	return MarshalWithExtra(w, extra)
}

var errNotOnePass = errors.New("not for the one-pass encoder")

// appendWire appends the wire struct w and then the unknown members in
// name order. nested says the object is inside another, where
// encoding/json escapes the HTML characters of the unknown members too.
func appendWire(dst []byte, w reflect.Value, extra Extra, nested bool) ([]byte, error) {
	p := encPlanOf(w.Type())
	if p == nil {
		return nil, errNotOnePass
	}
	dst = append(dst, '{')
	first := true
	for _, f := range p.fields {
		fv := w.Field(f.index)
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.name...)
		var err error
		if dst, err = f.enc(dst, fv); err != nil {
			return nil, err
		}
	}
	if len(extra) > 0 {
		names := make([]string, 0, len(extra))
		for k := range extra {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var buf bytes.Buffer
			if err := json.Compact(&buf, extra[k]); err != nil {
				return nil, err
			}
			if nested {
				var esc bytes.Buffer
				json.HTMLEscape(&esc, buf.Bytes())
				buf = esc
			}
			dst = append(dst, buf.Bytes()...)
		}
	}
	return append(dst, '}'), nil
}

// encPlan is how the encoder writes a wire struct: its fields in order.
type encPlan struct {
	fields []encField
}

type encField struct {
	index     int
	name      string // `"name":`
	omitEmpty bool
	enc       valueEncoder
}

// valueEncoder appends the JSON of v.
type valueEncoder func(dst []byte, v reflect.Value) ([]byte, error)

var encPlans sync.Map // reflect.Type -> *encPlan (nil: encoding/json writes it)

func encPlanOf(t reflect.Type) *encPlan {
	if p, ok := encPlans.Load(t); ok {
		return p.(*encPlan)
	}
	p := &encPlan{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, o, skip := jsonField(f)
		if f.Anonymous || strings.Contains(o, ",string,") || strings.Contains(o, ",omitzero,") {
			p = nil
			break
		}
		if skip {
			continue
		}
		p.fields = append(p.fields, encField{index: i, name: string(appendString(nil, name)) + ":",
			omitEmpty: strings.Contains(o, ",omitempty,"), enc: encoderFor(f.Type)})
	}
	encPlans.Store(t, p)
	return p
}

var (
	wireFormType      = reflect.TypeFor[WireForm]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// encoderFor returns the encoder of a field or element of type t.
func encoderFor(t reflect.Type) valueEncoder {
	switch {
	case t.Kind() != reflect.Pointer && t.Implements(wireFormType):
		return func(dst []byte, v reflect.Value) ([]byte, error) {
			w, extra := v.Interface().(WireForm).Wire()
			return appendWire(dst, reflect.ValueOf(w), extra, true)
		}
	case t.Implements(marshalerType) || t.Implements(textMarshalerType):
		return encodeByJSON
	case t.Kind() == reflect.String:
		return func(dst []byte, v reflect.Value) ([]byte, error) { return appendString(dst, v.String()), nil }
	case t.Kind() == reflect.Pointer:
		elem := encoderFor(t.Elem())
		return func(dst []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(dst, "null"...), nil
			}
			return elem(dst, v.Elem())
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		elem := encoderFor(t.Elem())
		return func(dst []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(dst, "null"...), nil
			}
			dst = append(dst, '[')
			for i := range v.Len() {
				if i > 0 {
					dst = append(dst, ',')
				}
				var err error
				if dst, err = elem(dst, v.Index(i)); err != nil {
					return nil, err
				}
			}
			return append(dst, ']'), nil
		}
	}
	return encodeByJSON
}

// encodeByJSON hands one value to encoding/json.
func encodeByJSON(dst []byte, v reflect.Value) ([]byte, error) {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// isEmptyValue is encoding/json's test for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoding, HTML characters
// escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
