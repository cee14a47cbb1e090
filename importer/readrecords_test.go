package importer_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
)

func TestReadRecordsShapes(t *testing.T) {
	obj := `{"id":"IL-0001","org":"A","org_slug":"a","title":{"en":"x"}}`
	for name, c := range map[string]struct {
		data  string
		n     int
		where string
	}{
		"Object":          {obj, 1, "f"},
		"PrettyObject":    {"{\n  \"id\": \"IL-0001\",\n  \"org\": \"A\"\n}\n", 1, "f"},
		"Array":           {"[" + obj + "," + strings.Replace(obj, "0001", "0002", 1) + "]", 2, "f[1]"},
		"JSONL":           {obj + "\n\n" + strings.Replace(obj, "0001", "0002", 1) + "\n", 2, "f:3"},
		"JSONLNoTrailing": {obj + "\n" + obj, 2, "f:2"},
	} {
		t.Run(name, func(t *testing.T) {
			recs, err := importer.ReadRecords("f", []byte(c.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != c.n || recs[len(recs)-1].Where != c.where {
				t.Fatalf("%d records, last at %q", len(recs), recs[len(recs)-1].Where)
			}
		})
	}
	for name, c := range map[string]struct{ data, want string }{
		"ErrEmpty":         {"  \n", "empty"},
		"ErrNotUTF8":       {"{\"id\":\"IL-0001\",\"org\":\"\xff\"}", "UTF-8"},
		"ErrDuplicateKey":  {`{"id":"IL-0001","id":"IL-0002"}`, "twice"},
		"ErrNestedDup":     {`{"id":"IL-0001","title":{"en":"a","en":"b"}}`, "twice"},
		"ErrJSONLLine":     {obj + "\n{\"id\": \"IL-0009\", broken\n", "f:2 (id IL-0009)"},
		"ErrArrayIndex":    {"[" + obj + `,{"id":"IL-0003","date":5}]`, "f[1] (id IL-0003)"},
		"ErrNotAnObject":   {`[1]`, "f[0]"},
		"ErrWrongListType": {`{"id":"IL-0001","related":"IL-0002"}`, "related"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := importer.ReadRecords("f", []byte(c.data))
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("want EINVALID, got %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the error must say %q: %v", c.want, err)
			}
		})
	}
}

func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"id":"IL-0001","org":"A","org_slug":"a","title":{"en":"x"}}`))
	f.Add([]byte("[{\"id\":\"IL-0002\"},{}]"))
	f.Add([]byte("{\"id\":\"IL-0003\"}\n{\"x\":[1,{\"y\":null}]}\n"))
	f.Add([]byte(`{"id":"IL-0004","verification":"UNKNOWN","organization_roles":[{"org":"V","org_slug":"v","role":"VENDOR","x":{}}],"text_origin":{"ko":"ORIGINAL","ja":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := importer.ReadRecords("fuzz", data)
		if err != nil {
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("a bad input must be EINVALID, got %v", err)
			}
			return
		}
		// Whatever was read writes back to canonical JSON that reads the same.
		for _, r := range recs {
			a, err := json.Marshal(r.Incident)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			again, err := importer.ReadRecords("again", a)
			if err != nil {
				t.Fatalf("canonical output does not read back: %v\n%s", err, a)
			}
			b, _ := json.Marshal(again[0].Incident)
			if !bytes.Equal(a, b) {
				t.Fatalf("canonical output is not stable:\n%s\n%s", a, b)
			}
		}
	})
}
