package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// checkJSONDuplicateKeys is iljson.CheckDuplicateKeys, whose
// *DuplicateKeyError says "duplicate key ..." (jsonProblem keeps such
// reasons as they are), with an input that ends inside a value said as
// encoding/json says it.
func checkJSONDuplicateKeys(data []byte) error {
	err := iljson.CheckDuplicateKeys(data)
	var pe *iljson.JSONError
	if errors.As(err, &pe) && pe.Err == io.EOF {
		return &iljson.JSONError{Offset: pe.Offset, Err: errUnexpectedEnd}
	}
	return err
}

var errUnexpectedEnd = errors.New("unexpected end of JSON input")

// schema lists the member names of an IL-JSON object and the schemas of
// its object and list members, to find names that differ from a known one
// only in case ("Title" for "title"), which encoding/json would read into
// the known field and also keep as an unknown one.
type schema struct {
	known    map[string]bool
	children map[string]*schema // member -> schema of the object, or of each list element
}

var incidentSchema = func() *schema {
	text := &schema{known: incidentlib.KnownMembers(incidentlib.Text{})}
	item := &schema{known: incidentlib.KnownMembers(incidentlib.Item{}), children: map[string]*schema{"text": text}}
	s := &schema{known: incidentlib.KnownMembers(incidentlib.Incident{}), children: map[string]*schema{
		"impact":      {known: incidentlib.KnownMembers(incidentlib.Impact{})},
		"timeline":    {known: incidentlib.KnownMembers(incidentlib.Timeline{})},
		"review":      {known: incidentlib.KnownMembers(incidentlib.Review{})},
		"sources":     {known: incidentlib.KnownMembers(incidentlib.Source{})},
		"remediation": item, "action_items": item,
		"organization_roles": {known: incidentlib.KnownMembers(incidentlib.OrgRole{})},
		"text_origin":        {known: incidentlib.KnownMembers(incidentlib.TextOrigins{})},
		"events":             {known: incidentlib.KnownMembers(incidentlib.Event{}), children: map[string]*schema{"text": text}},
	}}
	for _, f := range []string{"title", "summary", "lessons", "trigger", "detection", "symptoms_text"} {
		s.children[f] = text
	}
	return s
}()

// checkCase returns an error naming the first member of raw whose name
// differs only in case from a known member name.
func (s *schema) checkCase(raw json.RawMessage, path string) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil // not an object: encoding/json reports it
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		val := obj[name]
		if !s.known[name] {
			// The record grammar's rule (incidentlib.ReservedMember), on
			// the text: a decoded record no longer shows a case variant
			// that encoding/json read into the known field.
			if why := incidentlib.ReservedMember(name, s.known, false); why != "" {
				return fmt.Errorf("member %q of %s %s", name, pathOr(path), why)
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
