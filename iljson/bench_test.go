package iljson_test

import (
	"encoding/json"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
)

// BenchmarkUnmarshalIncident decodes canonical IL-JSON records, as the
// store does on a record cache miss.
func BenchmarkUnmarshalIncident(b *testing.B) {
	incs, err := gen.Generate(gen.Options{Count: 500, Seed: 3, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([][]byte, len(incs))
	size := 0
	for i, inc := range incs {
		if recs[i], err = json.Marshal(inc); err != nil {
			b.Fatal(err)
		}
		size += len(recs[i])
	}
	b.SetBytes(int64(size / len(recs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var inc incidentlib.Incident
		if err := json.Unmarshal(recs[i%len(recs)], &inc); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDecodeRecord decodes canonical IL-JSON records with
// Incident.UnmarshalJSON itself, as the importer does: the one-pass
// decoder, without encoding/json's scan before it.
func BenchmarkDecodeRecord(b *testing.B) {
	incs, err := gen.Generate(gen.Options{Count: 500, Seed: 3, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([][]byte, len(incs))
	size := 0
	for i, inc := range incs {
		if recs[i], err = json.Marshal(inc); err != nil {
			b.Fatal(err)
		}
		size += len(recs[i])
	}
	b.SetBytes(int64(size / len(recs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var inc incidentlib.Incident
		if err := inc.UnmarshalJSON(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEncodeRecord writes records in their stored form (the one-pass
// encoder).
func BenchmarkEncodeRecord(b *testing.B) {
	incs, err := gen.Generate(gen.Options{Count: 500, Seed: 3, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := incs[i%len(incs)].MarshalJSON(); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
