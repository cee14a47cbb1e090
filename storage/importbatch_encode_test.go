package storage_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestCanonicalJSON: the import's encoding is json.Marshal's, byte for
// byte, for generated records and for records whose texts and unknown
// members (at the top and further down) hold what json.Marshal escapes.
func TestCanonicalJSON(t *testing.T) {
	var incs []*incidentlib.Incident
	err := gen.Stream(gen.Options{Count: 300, Seed: 3, Taxonomy: seeds.MustTaxonomy()}, func(inc *incidentlib.Incident) error {
		incs = append(incs, inc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		`{"id":"IL-0001","org":"A & B <x>","org_slug":"a-b","title":{"en":"a <b> & c \u2028 d \u2029"}}`,
		`{"id":"IL-0002","org":"A","org_slug":"a","title":{"en":"t","x-note":"<&>"},"x-top":{"k":"<a> & \u2028"}}`,
		`{"id":"IL-0003","org":"A","org_slug":"a","title":{"en":"t"},"x-top":[1, 2, {"a" : "b"}],"sources":[{"url":"https://e.example/?a=1&b=2","x":"<"}]}`,
		"{\"id\":\"IL-0004\",\"org\":\"A\",\"org_slug\":\"a\",\"title\":{\"en\":\"t\"},\"x-raw\":\"a \u2028 b <\"}",
	} {
		inc := new(incidentlib.Incident)
		if err := json.Unmarshal([]byte(raw), inc); err != nil {
			t.Fatal(err)
		}
		incs = append(incs, inc)
	}
	for _, inc := range incs {
		want, err := json.Marshal(inc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := storage.CanonicalJSON(inc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", inc.ID, got, want)
		}
	}
}
