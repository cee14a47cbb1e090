package iljson_test

import (
	"encoding/json"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
)

// benchRecords returns the generated records of the benchmarks and their
// canonical IL-JSON.
func benchRecords(b *testing.B) ([]*incidentlib.Incident, [][]byte) {
	incs, err := gen.Generate(gen.Options{Count: 500, Seed: 3, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([][]byte, len(incs))
	for i, inc := range incs {
		if recs[i], err = json.Marshal(inc); err != nil {
			b.Fatal(err)
		}
	}
	return incs, recs
}

// benchDecode decodes the benchmarks' records with decode, round robin.
func benchDecode(b *testing.B, decode func([]byte, *incidentlib.Incident) error) {
	_, recs := benchRecords(b)
	size := 0
	for _, r := range recs {
		size += len(r)
	}
	b.SetBytes(int64(size / len(recs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var inc incidentlib.Incident
		if err := decode(recs[i%len(recs)], &inc); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkUnmarshalIncident decodes canonical IL-JSON records, as the
// store does on a record cache miss.
func BenchmarkUnmarshalIncident(b *testing.B) {
	benchDecode(b, func(rec []byte, inc *incidentlib.Incident) error { return json.Unmarshal(rec, inc) })
}

// BenchmarkDecodeRecord decodes canonical IL-JSON records with
// Incident.UnmarshalJSON itself, as the importer does: the one-pass
// decoder, without encoding/json's scan before it.
func BenchmarkDecodeRecord(b *testing.B) {
	benchDecode(b, func(rec []byte, inc *incidentlib.Incident) error { return inc.UnmarshalJSON(rec) })
}

// BenchmarkEncodeRecord writes records in their stored form (the one-pass
// encoder).
func BenchmarkEncodeRecord(b *testing.B) {
	incs, _ := benchRecords(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := incs[i%len(incs)].MarshalJSON(); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
