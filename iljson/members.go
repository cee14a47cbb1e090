package iljson

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// MemberWalk walks a record's objects for the record grammar (the domain's
// rules of member names): it finds, by reflection, every Extra a record
// holds and every raw JSON value (json.RawMessage), in lists and pointers
// too, and hands each to the caller with its path. It follows the Go types
// (a plan per type, made once), so an object type added to the record is
// walked without a change here.
type MemberWalk struct {
	// Known returns the member names of an object of v's type (a pointer
	// to a zero value), or nil: what the Extra of that type may not be
	// named. It is called once per type.
	Known func(v any) map[string]bool

	plans sync.Map // reflect.Type -> *memberPlan
}

// MemberVisitor is what MemberWalk.Walk calls: Extra for an object's
// unknown members, whose known members are known (top: the record
// itself); Raw for a raw JSON value. path is the object's or the value's
// path of JSON names and list indexes; it is the walk's buffer, to be
// copied if kept.
type MemberVisitor interface {
	Extra(path []string, extra Extra, known map[string]bool, top bool)
	Raw(path []string, raw json.RawMessage)
}

// Walk walks the record v (a pointer to a struct), calling vis for every
// Extra and raw JSON value it holds.
func (m *MemberWalk) Walk(v any, vis MemberVisitor) {
	m.walk(vis, reflect.ValueOf(v), nil, true)
}

var (
	extraType = reflect.TypeFor[Extra]()
	rawType   = reflect.TypeFor[json.RawMessage]()
)

// walk leaves path as it found it.
func (m *MemberWalk) walk(vis MemberVisitor, v reflect.Value, path []string, top bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			m.walk(vis, v.Elem(), path, top)
		}
	case reflect.Slice:
		if v.Type() == rawType {
			vis.Raw(path, v.Bytes())
			return
		}
		for k := range v.Len() {
			m.walk(vis, v.Index(k), append(path, strconv.Itoa(k)), false)
		}
	case reflect.Struct:
		plan := m.planOf(v.Type())
		for _, f := range plan.fields {
			fv := v.Field(f.index)
			if f.extra {
				vis.Extra(path, fv.Interface().(Extra), plan.known, top)
				continue
			}
			if fv.Kind() == reflect.Slice && fv.Len() == 0 {
				continue
			}
			m.walk(vis, fv, append(path, f.name), false)
		}
	}
}

// memberPlan is how the walk goes through a struct type: its Extra, and
// the fields that hold objects or raw JSON, by JSON name.
type memberPlan struct {
	known  map[string]bool
	fields []memberField
}

type memberField struct {
	index int
	name  string
	extra bool
}

func (m *MemberWalk) planOf(t reflect.Type) *memberPlan {
	if p, ok := m.plans.Load(t); ok {
		return p.(*memberPlan)
	}
	p := &memberPlan{known: m.Known(reflect.New(t).Interface())}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type == extraType {
			p.fields = append(p.fields, memberField{index: i, extra: true})
			continue
		}
		if holdsMembers(f.Type, map[reflect.Type]bool{}) {
			p.fields = append(p.fields, memberField{index: i, name: memberName(f)})
		}
	}
	m.plans.Store(t, p)
	return p
}

// holdsMembers reports whether a value of type t may hold an object with
// unknown members or raw JSON.
func holdsMembers(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == rawType || t == extraType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsMembers(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsMembers(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// memberName is the JSON name of a record type's field: its json tag,
// else its name in lower case (Event's fields, written by its wire form).
func memberName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
		return name
	}
	return strings.ToLower(f.Name)
}
