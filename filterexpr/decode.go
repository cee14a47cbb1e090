package filterexpr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/incidentlib/incidentlib"
)

// Fields are the names of IncidentFilter's fields in GraphQL (the input
// type IncidentFilter), which its JSON form uses. A test holds them to the
// served schema.
var Fields = []string{"ids", "organizations", "domains", "symptoms", "components", "rootCauses", "contributing",
	"severities", "dateFrom", "dateTo", "updatedSince", "reviewed", "reviewStates", "isRecurrence", "hasRecurrences",
	"verification", "not", "or"}

// Decode reads a filter in its JSON form, the one a GraphQL request's
// variables give an IncidentFilter: an object whose keys are exactly
// Fields (case and all), lists as JSON arrays, null as not given. It
// refuses anything else, and anything past MaxDepth or MaxNodes before it
// reads further, as EINVALID naming the path from "filter"; it does not
// check the values (Validate, which the store runs, does).
func Decode(data []byte) (incidentlib.IncidentFilter, error) {
	d := decoder{}
	var f incidentlib.IncidentFilter
	err := d.node(data, &f, []string{"filter"}, 0)
	return f, err
}

type decoder struct{ c counter }

func (d *decoder) node(data []byte, f *incidentlib.IncidentFilter, path []string, depth int) error {
	if err := d.c.enter(path, depth); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return incidentlib.FieldErrorf(incidentlib.EINVALID, path, "%s must be a JSON object of IncidentFilter's fields", pathString(path))
	}
	for name, raw := range m {
		p := at(path, name)
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			if !isField(name) {
				return unknown(p, name)
			}
			continue
		}
		var err error
		switch name {
		case "ids":
			err = strictly(raw, &f.IDs)
		case "organizations":
			err = strictly(raw, &f.Organizations)
		case "domains":
			err = strictly(raw, &f.Domains)
		case "symptoms":
			err = strictly(raw, &f.Symptoms)
		case "components":
			err = strictly(raw, &f.Components)
		case "rootCauses":
			err = strictly(raw, &f.RootCauses)
		case "contributing":
			err = strictly(raw, &f.Contributing)
		case "severities":
			err = strictly(raw, &f.Severities)
		case "dateFrom":
			err = strictly(raw, &f.DateFrom)
		case "dateTo":
			err = strictly(raw, &f.DateTo)
		case "updatedSince":
			err = strictly(raw, &f.UpdatedSince)
		case "reviewed":
			err = strictly(raw, &f.Reviewed)
		case "reviewStates":
			err = strictly(raw, &f.ReviewStates)
		case "isRecurrence":
			err = strictly(raw, &f.IsRecurrence)
		case "hasRecurrences":
			err = strictly(raw, &f.HasRecurrences)
		case "verification":
			err = strictly(raw, &f.Verification)
		case "not":
			f.Not = &incidentlib.IncidentFilter{}
			if err := d.node(raw, f.Not, p, depth+1); err != nil {
				return err
			}
		case "or":
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) != nil || items == nil {
				return incidentlib.FieldErrorf(incidentlib.EINVALID, p, "%s must be a JSON array of filters", pathString(p))
			}
			f.Or = make([]incidentlib.IncidentFilter, len(items))
			for i, it := range items {
				if err := d.node(it, &f.Or[i], at(p, strconv.Itoa(i)), depth+1); err != nil {
					return err
				}
			}
		default:
			return unknown(p, name)
		}
		if err != nil {
			return incidentlib.FieldErrorf(incidentlib.EINVALID, p, "%s is not of its GraphQL type in IncidentFilter: %v", pathString(p), err)
		}
	}
	return nil
}

func isField(name string) bool { return slices.Contains(Fields, name) }

func unknown(path []string, name string) error {
	return incidentlib.FieldErrorf(incidentlib.EINVALID, path, "%s: unknown field %q of IncidentFilter", pathString(path), name)
}

// strictly decodes raw into v, saying only which JSON type it was given
// when that is not v's.
func strictly(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("a JSON %s where it takes another type", te.Value)
		}
		return err
	}
	return nil
}
