package filterexpr_test

import (
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/filterexpr"
)

// TestDecode: the JSON form takes GraphQL's names exactly, null as not
// given, and refuses the rest as INVALID naming the path.
func TestDecode(t *testing.T) {
	f, err := filterexpr.Decode([]byte(`{"ids": null, "symptoms": ["oom"], "reviewed": false,
		"not": {"reviewStates": ["WITHDRAWN"]}, "or": [{"dateFrom": "2020-01-01"}, {}]}`))
	if err != nil || len(f.Symptoms) != 1 || f.Reviewed == nil || *f.Reviewed || f.IDs != nil ||
		f.Not == nil || f.Not.ReviewStates[0] != incidentlib.ReviewWithdrawn || len(f.Or) != 2 || *f.Or[0].DateFrom != "2020-01-01" {
		t.Fatalf("%+v %v", f, err)
	}
	for name, c := range map[string]struct{ json, path string }{
		"CaseMatters":  {`{"IDs": ["IL-0001"]}`, "filter.IDs"},
		"Unknown":      {`{"or": [{}, {"nope": 1}]}`, "filter.or.1.nope"},
		"SingleValue":  {`{"symptoms": "oom"}`, "filter.symptoms"},
		"NotAnObject":  {`[]`, "filter"},
		"OrNotAList":   {`{"or": {}}`, "filter.or"},
		"WrongType":    {`{"not": {"reviewed": "yes"}}`, "filter.not.reviewed"},
		"TooDeep":      {`{"not":{"not":{"not":{"not":{"not":{}}}}}}`, "filter.not.not.not.not.not"},
		"TooMany":      {`{"or": [` + strings.Repeat(`{},`, filterexpr.MaxNodes) + `{}]}`, "filter.or.31"},
		"Trailing":     {`{} {}`, "filter"},
		"NullFilterOr": {`{"or": [null]}`, "filter.or.0"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := filterexpr.Decode([]byte(c.json))
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID || strings.Join(incidentlib.ErrorField(err), ".") != c.path {
				t.Fatalf("%v (field %v), want INVALID at %s", err, incidentlib.ErrorField(err), c.path)
			}
		})
	}
}
