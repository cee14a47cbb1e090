package search

import (
	"context"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
)

// BenchmarkSearch runs pages of 20 hits with highlights over 10,000
// generated incidents, by class of query (compare the classes, or a class
// before and after a change, within one run:
// go test -run '^$' -bench Search -benchmem ./search), each without and
// with the built-in glossary (glossary.go). The records are
// decoded in the record cache, as a server's are once read.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	incs := generated(b, 10_000, 1)
	db := searchStore(b, incs)
	ids := make([]string, len(incs))
	for i, inc := range incs {
		ids[i] = inc.ID
	}
	if _, err := db.Incidents().FindIncidentsByIDs(ctx, ids); err != nil { // the record cache, as a server's
		b.Fatal(err)
	}
	x := mustOpen(b, db)
	gloss, err := seeds.GlossaryReader()
	if err != nil {
		b.Fatal(err)
	}
	xg, err := Open(ctx, db.Incidents(), b.TempDir(), Options{Glossary: gloss})
	if err != nil {
		b.Fatal(err)
	}
	defer xg.Close()
	classes := []struct {
		name    string
		queries []string
	}{
		{"1-word", []string{"outage", "leader", "certificate", "memory", "retries"}},
		{"3-word", []string{"service outage caused", "leader election failure", "data corruption problem", "request timeout client"}},
		{"phrase", []string{`"service discovery"`, `"leader election"`, `"restored service"`, `"connection pool"`}},
		{"Korean", []string{"장애", "커넥션", "데이터베이스", "리더 선출", "인증서"}},
	}
	first := 20
	// Each class without and with the glossary, one after the other.
	for _, c := range classes {
		for _, v := range []struct {
			name string
			x    *Index
		}{{"plain", x}, {"glossary", xg}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, err := v.x.Search(ctx, incidentlib.SearchQuery{Query: c.queries[i%len(c.queries)]}, incidentlib.PageArgs{First: &first}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSimilarByWords ranks the incidents sharing the glossary's words
// with one incident, over 10,000 generated incidents
// (go test -run '^$' -bench SimilarByWords ./search).
func BenchmarkSimilarByWords(b *testing.B) {
	ctx := context.Background()
	incs := generated(b, 10_000, 1)
	db := searchStore(b, incs)
	gloss, err := seeds.GlossaryReader()
	if err != nil {
		b.Fatal(err)
	}
	x, err := Open(ctx, db.Incidents(), b.TempDir(), Options{Glossary: gloss})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := x.SimilarByWords(ctx, incs[i%len(incs)].ID, 5); err != nil {
			b.Fatal(err)
		}
	}
}
