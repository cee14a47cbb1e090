package iljson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// The one-pass decoder of the record types that keep unknown members
// (Unmarshal). encoding/json decodes a record in several passes: it
// checks the whole text, then decodes it, and each nested type's
// UnmarshalJSON (Text, Item, Source, ...) is handed its part to check and
// decode again, and to walk a third time for the unknown members. This
// decoder reads the text once, straight into the wire structs (incidentJSON
// and the others), keeping the unknown members of every object as it
// goes.
//
// It is generic over the wire structs: it follows their fields and json
// tags by reflection (a plan per type, made once), so a new field of a
// wire struct needs nothing here. Fields of a type it does not read itself
// (numbers, booleans, maps, types with their own UnmarshalJSON) are handed
// to encoding/json, value by value.
//
// It only ever gives the result encoding/json gives, or gives up: on any
// text it is not sure about (invalid JSON, invalid UTF-8, a lone
// surrogate, a member name that differs from a field's only in case,
// escaped member names, deep nesting) it reports failure and the caller
// takes encoding/json's path, which decides and words the error.

// extraDecoderOf returns the one-pass decoder of T, whose wire form is W
// (see Unmarshal), and makes it the decoder of every T met
// inside another wire struct. The first call for a type registers it; an
// object that holds a T before any T was decoded on its own hands the T to
// encoding/json, which registers it.
func extraDecoderOf[W, T any](known map[string]bool, null NullRule, fromWire func(W, Extra) T) valueDecoder {
	t := reflect.TypeFor[T]()
	if f, ok := extraDecoders.Load(t); ok {
		return f.(valueDecoder)
	}
	dec := func(d *decoder, v reflect.Value) bool {
		if d.literal("null") {
			if null == NullIsError {
				return false
			}
			v.SetZero()
			return true
		}
		var w W
		extra, ok := d.object(reflect.ValueOf(&w).Elem(), known)
		if !ok {
			return false
		}
		*(v.Addr().Interface().(*T)) = fromWire(w, extra)
		return true
	}
	f, _ := extraDecoders.LoadOrStore(t, valueDecoder(dec))
	return f.(valueDecoder)
}

// decodeOnePass decodes data, a JSON object with nothing but space around
// it, into *dst with dec. It reports false, leaving *dst in any state,
// when it cannot (see above).
func decodeOnePass[T any](data []byte, dst *T, dec valueDecoder) bool {
	d := decoder{data: data}
	d.space()
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		return false
	}
	if !dec(&d, reflect.ValueOf(dst).Elem()) {
		return false
	}
	d.space()
	return d.i == len(d.data)
}

// extraDecoders maps each record type that keeps unknown members to its
// one-pass decoder.
var extraDecoders sync.Map // reflect.Type -> valueDecoder

// valueDecoder reads one JSON value at d into v (addressable).
type valueDecoder func(d *decoder, v reflect.Value) bool

// structPlan is how the decoder reads a wire struct: its fields by JSON
// name, each with its decoder. A nil plan is a struct it does not read
// (an embedded field, a ",string" option): encoding/json reads it.
type structPlan struct {
	fields map[string]planField
	lower  map[string]bool // the lowered names, to find case-only differences
}

type planField struct {
	index int
	dec   valueDecoder
}

var plans sync.Map // reflect.Type -> *structPlan

func planOf(t reflect.Type) *structPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan)
	}
	p := &structPlan{fields: map[string]planField{}, lower: map[string]bool{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, skip := jsonField(f)
		if f.Anonymous || strings.Contains(opts, ",string,") {
			p = nil
			break
		}
		if skip {
			continue
		}
		p.fields[name] = planField{index: i, dec: decoderFor(f.Type)}
		p.lower[strings.ToLower(name)] = true
	}
	plans.Store(t, p)
	return p
}

// jsonField is encoding/json's name of a struct field and its tag's
// options (",opt,...,"); skip says encoding/json leaves the field out.
func jsonField(f reflect.StructField) (name, opts string, skip bool) {
	name, opts, _ = strings.Cut(f.Tag.Get("json"), ",")
	skip = name == "-" && opts == "" || !f.IsExported()
	if name == "" {
		name = f.Name
	}
	return name, "," + opts + ",", skip
}

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// ownDecoding reports whether encoding/json would decode a t through a
// method of its own.
func ownDecoding(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType) ||
		t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType)
}

// decoderFor returns the decoder of a field or element of type t.
func decoderFor(t reflect.Type) valueDecoder {
	switch {
	case t == rawMessageType:
		return decodeRaw
	case t.Kind() == reflect.Pointer:
		// null is nil, whatever the type; else a new value, read as
		// encoding/json reads it.
		elem := decoderFor(t.Elem())
		return func(d *decoder, v reflect.Value) bool {
			if d.literal("null") {
				v.SetZero()
				return true
			}
			p := reflect.New(t.Elem())
			if !elem(d, p.Elem()) {
				return false
			}
			v.Set(p)
			return true
		}
	case ownDecoding(t):
		// A record type with unknown members is read here once it is
		// known (extraDecoderOf); any other, by its own method.
		return func(d *decoder, v reflect.Value) bool {
			if f, ok := extraDecoders.Load(v.Type()); ok {
				return f.(valueDecoder)(d, v)
			}
			return decodeByJSON(d, v)
		}
	case t.Kind() == reflect.String:
		return decodeString
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		elem := decoderFor(t.Elem())
		return func(d *decoder, v reflect.Value) bool { return d.slice(v, elem) }
	}
	return decodeByJSON
}

// decodeString reads a string into a field of a string kind; null leaves
// it as it is, as encoding/json does.
func decodeString(d *decoder, v reflect.Value) bool {
	if d.literal("null") {
		return true
	}
	s, ok := d.str()
	if ok {
		v.SetString(s)
	}
	return ok
}

// decodeRaw keeps a value's text as it is (json.RawMessage).
func decodeRaw(d *decoder, v reflect.Value) bool {
	start := d.i
	if !d.skip(0) {
		return false
	}
	v.SetBytes(append([]byte(nil), d.data[start:d.i]...))
	return true
}

// decodeByJSON hands one value to encoding/json.
func decodeByJSON(d *decoder, v reflect.Value) bool {
	start := d.i
	if !d.skip(0) {
		return false
	}
	return json.Unmarshal(d.data[start:d.i], v.Addr().Interface()) == nil
}

// object reads a JSON object into the wire struct w, returning the members
// that known does not name. A member in w's plan is decoded into w (the
// last one wins, as in encoding/json).
func (d *decoder) object(w reflect.Value, known map[string]bool) (Extra, bool) {
	p := planOf(w.Type())
	if p == nil || d.i >= len(d.data) || d.data[d.i] != '{' {
		return nil, false
	}
	d.i++
	var extra Extra
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return nil, true
	}
	var seen [2]uint64 // the fields read: a name twice is left to encoding/json
	for {
		name, ok := d.key()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		f, inPlan := p.fields[string(name)]
		switch {
		case inPlan:
			if !known[string(name)] || f.index >= 128 || seen[f.index/64]&(1<<(f.index%64)) != 0 {
				return nil, false
			}
			seen[f.index/64] |= 1 << (f.index % 64)
			if !f.dec(d, w.Field(f.index)) {
				return nil, false
			}
		case p.lower[string(bytes.ToLower(name))]:
			return nil, false // encoding/json matches it to a field regardless of case
		default:
			start := d.i
			if !d.skip(0) {
				return nil, false
			}
			if !known[string(name)] {
				if extra == nil {
					extra = Extra{}
				}
				extra[string(name)] = append(json.RawMessage(nil), d.data[start:d.i]...)
			}
		}
		if done, ok := d.next('}'); !ok {
			return nil, false
		} else if done {
			return extra, true
		}
	}
}

// slice reads a JSON array (or null) into the slice v with elem.
func (d *decoder) slice(v reflect.Value, elem valueDecoder) bool {
	if d.literal("null") {
		v.SetZero()
		return true
	}
	if d.i >= len(d.data) || d.data[d.i] != '[' {
		return false
	}
	d.i++
	d.space()
	out := reflect.MakeSlice(v.Type(), 0, 0)
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		v.Set(out)
		return true
	}
	for {
		out = reflect.Append(out, reflect.Zero(v.Type().Elem()))
		if !elem(d, out.Index(out.Len()-1)) {
			return false
		}
		if done, ok := d.next(']'); !ok {
			return false
		} else if done {
			v.Set(out)
			return true
		}
	}
}
