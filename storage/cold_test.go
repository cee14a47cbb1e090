package storage

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"testing"

	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
)

// TestColdFormat: a superseded record is stored as 'z' and DEFLATE, read
// back as it was; a value an older release compressed with the standard
// library's writer reads too, and so does a record kept as it was.
func TestColdFormat(t *testing.T) {
	incs, err := gen.Generate(gen.Options{Count: 20, Seed: 7, FirstID: 1, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range incs {
		rec, err := json.Marshal(inc)
		if err != nil {
			t.Fatal(err)
		}
		v := coldEncode(rec)
		if v[0] != 'z' || len(v) >= len(rec) {
			t.Fatalf("%s: stored as %d bytes starting %q, want 'z' and fewer than %d", inc.ID, len(v), v[:1], len(rec))
		}
		// The standard library reads what is written now.
		got, err := coldDecode(v)
		if err != nil || !bytes.Equal(got, rec) {
			t.Fatalf("%s: read back %d bytes (%v), want the record's %d", inc.ID, len(got), err, len(rec))
		}
		// What older releases wrote.
		var old bytes.Buffer
		old.WriteByte('z')
		w, _ := flate.NewWriter(&old, flate.BestSpeed)
		if _, err := w.Write(rec); err != nil || w.Close() != nil {
			t.Fatal("compress", err)
		}
		if got, err := coldDecode(old.Bytes()); err != nil || !bytes.Equal(got, rec) {
			t.Fatalf("%s: an older release's value read back as %d bytes (%v)", inc.ID, len(got), err)
		}
		if got, err := coldDecode(rec); err != nil || !bytes.Equal(got, rec) {
			t.Fatalf("%s: an uncompressed value read back as %d bytes (%v)", inc.ID, len(got), err)
		}
	}
}
