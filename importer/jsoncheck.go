package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/incidentlib/incidentlib"
)

// jsonError is a JSON problem at a byte offset of the input.
type jsonError struct {
	Offset int64
	Msg    string
}

func (e *jsonError) Error() string { return e.Msg }

// jsonErrorOffset returns the byte offset an encoding/json error names, or -1.
func jsonErrorOffset(err error) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var je *jsonError
	switch {
	case errors.As(err, &je):
		return je.Offset
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	return -1
}

// checkJSONDuplicateKeys returns a *jsonError for the first object, at any
// depth, that has a member name twice, and for a syntax error.
func checkJSONDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object    bool
		expectKey bool
		keys      map[string]bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) > 0 {
				return &jsonError{Offset: int64(len(data)), Msg: "unexpected end of JSON input"}
			}
			return nil
		}
		if err != nil {
			if o := jsonErrorOffset(err); o >= 0 {
				return &jsonError{Offset: o, Msg: err.Error()}
			}
			return &jsonError{Offset: dec.InputOffset(), Msg: err.Error()}
		}
		top := (*frame)(nil)
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				if top != nil && top.object {
					top.expectKey = false
				}
				stack = append(stack, &frame{object: true, expectKey: true, keys: map[string]bool{}})
			case '[':
				if top != nil && top.object {
					top.expectKey = false
				}
				stack = append(stack, &frame{})
			case '}', ']':
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if top != nil && top.object && top.expectKey {
				if top.keys[t] {
					return &jsonError{Offset: keyOffset(data, off), Msg: fmt.Sprintf("duplicate key %q in a JSON object", t)}
				}
				top.keys[t] = true
				top.expectKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 {
			// one top-level value read; more values are JSON Lines, which
			// callers split themselves, so stop here.
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

// schema lists the member names of an IL-JSON object and the schemas of
// its object and list members, to find names that differ from a known one
// only in case ("Title" for "title"), which encoding/json would read into
// the known field and also keep as an unknown one.
type schema struct {
	known    map[string]bool
	children map[string]*schema // member -> schema of the object, or of each list element
}

var incidentSchema = func() *schema {
	text := &schema{known: knownOf(incidentlib.Text{})}
	item := &schema{known: knownOf(incidentlib.Item{}), children: map[string]*schema{"text": text}}
	s := &schema{known: knownOf(incidentlib.Incident{}), children: map[string]*schema{
		"impact":      {known: knownOf(incidentlib.Impact{})},
		"timeline":    {known: knownOf(incidentlib.Timeline{})},
		"review":      {known: knownOf(incidentlib.Review{})},
		"sources":     {known: knownOf(incidentlib.Source{})},
		"remediation": item, "action_items": item,
	}}
	for _, f := range []string{"title", "summary", "lessons", "trigger", "detection", "symptoms_text"} {
		s.children[f] = text
	}
	return s
}()

// knownOf lists the JSON member names v marshals with.
func knownOf(v any) map[string]bool {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	known := map[string]bool{}
	for k := range m {
		known[k] = true
	}
	if _, ok := v.(incidentlib.Text); ok {
		known["en"], known["ko"] = true, true
	}
	return known
}

// checkCase returns an error naming the first member of raw whose name
// differs only in case from a known member name.
func (s *schema) checkCase(raw json.RawMessage, path string) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil // not an object: encoding/json reports it
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		val := obj[name]
		if !s.known[name] {
			for k := range s.known {
				if strings.EqualFold(k, name) {
					return fmt.Errorf("member %q of %s differs from the known field %q only in case", name, pathOr(path), k)
				}
			}
			continue
		}
		child := s.children[name]
		if child == nil {
			continue
		}
		p := join(path, name)
		var list []json.RawMessage
		if json.Unmarshal(val, &list) == nil {
			for i, el := range list {
				if err := child.checkCase(el, fmt.Sprintf("%s[%d]", p, i)); err != nil {
					return err
				}
			}
			continue
		}
		if err := child.checkCase(val, p); err != nil {
			return err
		}
	}
	return nil
}

func pathOr(p string) string {
	if p == "" {
		return "the record"
	}
	return p
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
