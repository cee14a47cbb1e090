package server_test

import (
	"testing"
)

// BenchmarkFieldCost measures what each field of a list page costs, to
// calibrate graph/complexity.go (docs/limits.md, "How the costs were
// measured"): a page of 100 generated incidents (benchServer's store of
// 10,000) with the field, against the same page with ids only. Per field
// it reports cpu-ns/op (the process's CPU per request) and readtx/op (the
// store's read transactions per request); the field's CPU per item is
// (cpu-ns/op - the base's) / 100.
//
//	go test -run '^$' -bench FieldCost -benchtime 300x ./server
func BenchmarkFieldCost(b *testing.B) {
	for _, c := range fieldCostCases {
		b.Run(c.name, func(b *testing.B) {
			benchServer(b)
			tx0 := benchFixture.db.Maintenance().StoreStats().ReadTxTotal
			benchPost(b, c.query, nil, false)
			b.ReportMetric(float64(benchFixture.db.Maintenance().StoreStats().ReadTxTotal-tx0)/float64(b.N), "readtx/op")
		})
	}
}

// fieldCostCases are the measured pages: nodes { id FIELD } per item
// field, a field of the page beside nodes { id } per page field.
var fieldCostCases = func() []struct{ name, query string } {
	item := func(sel string) string { return `{ incidents(first: 100) { nodes { id ` + sel + ` } } }` }
	// similar ranks on each incident: pages of 10.
	ten := func(sel string) string { return `{ incidents(first: 10) { nodes { id ` + sel + ` } } }` }
	page := func(sel string) string { return `{ incidents(first: 100) { nodes { id } ` + sel + ` } }` }
	return []struct{ name, query string }{
		{"Warm", item("title")},
		{"Base", item("")},
		{"Title", item("title")},
		{"TitleSummaryLessons", item("title summary lessons")},
		{"Organization", item("organization { name incidentCount }")},
		{"Symptoms", item("symptoms { label }")},
		{"FourTermLists", item("domains { label } symptoms { label } components { label } contributing { label }")},
		{"Related", item("related { id title }")},
		{"RelatedRelated", item("related { id title related { id } }")},
		{"RelatedBy", item("relatedBy { id title }")},
		{"RecurrenceOf", item("recurrenceOf { id title }")},
		{"Recurrences", item("recurrences { id }")},
		{"Events", item("events { at kind text }")},
		{"Sources", item("sources { url archived }")},
		{"Remediation", item("remediation { text }")},
		{"Similar3", ten("similar(first: 3) { score incident { id title } }")},
		{"Similar3SharedTerms", ten("similar(first: 3) { score sharedTerms { label } incident { id title } }")},
		{"Similar20", ten("similar(first: 20) { score incident { id title } }")},
		{"TenBase", ten("")},
		{"TotalCount", page("totalCount")},
		{"FacetOneKind", page("facets(kinds: [SYMPTOM]) { kind counts { term { slug label } count } }")},
		{"Years", page("years { year count }")},
		{"ReadmeListPage", `{ incidents(first: 100) { totalCount pageInfo { hasNextPage endCursor } nodes { id date title organization { name incidentCount } symptoms { label } related { id title related { id } } recurrenceOf { id title } recurrences { id } } facets(kinds: [SYMPTOM, ROOT_CAUSE]) { kind counts { term { slug label } count } } years { year count } } }`},
		{"ReadmeListPageFiltered", `{ incidents(first: 100, filter: { symptoms: ["high-latency"], dateFrom: "2020-01-01" }) { totalCount nodes { id date title organization { name incidentCount } symptoms { label } related { id title related { id } } recurrenceOf { id title } recurrences { id } } facets(kinds: [SYMPTOM, ROOT_CAUSE]) { kind counts { term { slug label } count } } years { year count } } }`},
	}
}()
