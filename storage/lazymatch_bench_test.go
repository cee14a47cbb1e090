package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// BenchmarkWalkOrIntersect: the first page (20, date descending, walked
// in the order index) of filters of two sets of several densities, the
// walk asking each set (parts) or the intersection built first
// (intersect), to place lazymatch.go's containsPerElement, and the count
// alone (CountIncidents) each way. Each case is named with the set's size
// and its smallest part's:
//
//	go test -run '^$' -bench WalkOrIntersect -benchtime 200x ./storage/
func BenchmarkWalkOrIntersect(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10_000, 100_000} {
		orgs, symptoms, recurrences := map[string]int{}, map[string]int{}, 0
		db, _, _ := streamedStore(b, n, func(inc *incidentlib.Incident) { // periods_bench_test.go
			orgs[inc.OrgSlug]++
			if inc.RecurrenceOf != "" {
				recurrences++
			}
			for _, s := range inc.Symptoms {
				symptoms[s]++
			}
		})
		common, rare := "", ""
		for s, c := range symptoms {
			if common == "" || c > symptoms[common] {
				common = s
			}
			if rare == "" || c < symptoms[rare] {
				rare = s
			}
		}
		bigOrg := ""
		for s, c := range orgs {
			if bigOrg == "" || c > orgs[bigOrg] {
				bigOrg = s
			}
		}
		filters := []struct {
			name  string
			f     incidentlib.IncidentFilter
			small int // the smallest part, about
		}{
			{"every-dated+common-symptom", incidentlib.IncidentFilter{DateFrom: ptr("1990-01-01"), DateTo: ptr("2026-06-30"), Symptoms: []string{common}}, symptoms[common]},
			{"range+common-symptom", incidentlib.IncidentFilter{DateFrom: ptr("2010-03-15"), DateTo: ptr("2019-10-20"), Symptoms: []string{common}}, symptoms[common]},
			{"common-symptom+recurrence", incidentlib.IncidentFilter{Symptoms: []string{common}, IsRecurrence: ptr(true)}, min(recurrences, symptoms[common])},
			{"rare-symptom+range", incidentlib.IncidentFilter{DateFrom: ptr("2010-03-15"), DateTo: ptr("2019-10-20"), Symptoms: []string{rare}}, symptoms[rare]},
			{"big-org+common-symptom", incidentlib.IncidentFilter{Organizations: []string{bigOrg}, Symptoms: []string{common}}, orgs[bigOrg]},
		}
		for _, fc := range filters {
			total, err := db.Incidents().CountIncidents(ctx, fc.f)
			if err != nil {
				b.Fatal(err)
			}
			for _, how := range []struct {
				name string
				mode int
			}{{"parts", storage.MembershipParts}, {"intersect", storage.MembershipIntersect}} {
				b.Run(fmt.Sprintf("%d/%s/set-%d/smallest-%d/count/%s", n, fc.name, total, fc.small, how.name), func(b *testing.B) {
					defer storage.SetMembershipMode(how.mode)()
					for b.Loop() {
						if _, err := db.Incidents().CountIncidents(ctx, fc.f); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(fmt.Sprintf("%d/%s/set-%d/smallest-%d/page/%s", n, fc.name, total, fc.small, how.name), func(b *testing.B) {
					defer storage.SetMembershipMode(how.mode)()
					defer storage.SetSmallSet(-1)()
					first := 20
					for b.Loop() {
						if _, err := db.Incidents().FindIncidents(ctx, fc.f, incidentlib.DefaultOrder, incidentlib.PageArgs{First: &first}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
		db.Close()
	}
}

// BenchmarkRoaringCosts: what lazymatch.go's cost model weighs, on random
// bitmaps read back from their serialized form as postings are: building
// the intersection of a smaller set with one of nine tenths of the
// library (and), counting it (andcard), and 1,000 Contains (contains):
//
//	go test -run '^$' -bench RoaringCosts -benchtime 300x ./storage/
func BenchmarkRoaringCosts(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	posting := func(n, universe int) *roaring.Bitmap {
		bm := roaring.New()
		for bm.GetCardinality() < uint64(n) {
			bm.Add(uint32(r.IntN(universe)))
		}
		bm.RunOptimize()
		buf, err := bm.ToBytes()
		if err != nil {
			b.Fatal(err)
		}
		out := roaring.New()
		if _, err := out.FromBuffer(buf); err != nil {
			b.Fatal(err)
		}
		return out
	}
	for _, library := range []int{100_000, 1_000_000} {
		for _, small := range []int{library / 100, library / 10, library / 2} {
			a, c := posting(small, library), posting(library*9/10, library)
			b.Run(fmt.Sprintf("%d/%d/and", library, small), func(b *testing.B) {
				for b.Loop() {
					_ = roaring.And(a, c)
				}
			})
			b.Run(fmt.Sprintf("%d/%d/andcard", library, small), func(b *testing.B) {
				for b.Loop() {
					_ = a.AndCardinality(c)
				}
			})
			b.Run(fmt.Sprintf("%d/%d/contains", library, small), func(b *testing.B) {
				for b.Loop() {
					for i := range 1000 {
						_ = a.Contains(uint32(i * 97))
					}
				}
			})
		}
	}
}

// BenchmarkCountOrSet: what Query.stats reads for count alone (CountIncidents,
// counted from the postings) against what it read before (MatchSet, the
// set built), for the harness's date range + symptom filter and a symptom
// alone, at 100,000 and 1,000,000 incidents:
//
//	go test -run '^$' -bench CountOrSet -benchtime 200x ./storage/
func BenchmarkCountOrSet(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100_000, 1_000_000} {
		symptoms := map[string]int{}
		db, _, _ := streamedStore(b, n, func(inc *incidentlib.Incident) {
			for _, s := range inc.Symptoms {
				symptoms[s]++
			}
		})
		common := ""
		for s, c := range symptoms {
			if common == "" || c > symptoms[common] {
				common = s
			}
		}
		for _, fc := range []struct {
			name string
			f    incidentlib.IncidentFilter
		}{
			{"every-dated+common-symptom", incidentlib.IncidentFilter{DateFrom: ptr("1990-01-01"), DateTo: ptr("2026-06-30"), Symptoms: []string{common}}},
			{"common-symptom", incidentlib.IncidentFilter{Symptoms: []string{common}}},
		} {
			b.Run(fmt.Sprintf("%d/%s/count", n, fc.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := db.Incidents().CountIncidents(ctx, fc.f); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%d/%s/set", n, fc.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := db.Incidents().MatchSet(ctx, fc.f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		db.Close()
	}
}
