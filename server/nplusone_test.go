// The proof runs over 10,000 incidents; the race detector makes building
// that store ten times slower and has nothing to find in it that the other
// server tests do not cover, so `make test` runs this file without it.

//go:build !race

package server_test

import (
	"context"
	"encoding/json"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// metricValues reads every sample of the metrics whose name starts with
// prefix from /metrics.
func metricValues(t *testing.T, ts *testServer, prefix string) map[string]float64 {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

type listPage struct {
	Incidents struct {
		Nodes []listNode
	}
}

type listNode struct {
	ID           string
	Title        string
	Organization struct {
		Name          string
		IncidentCount int
	}
	Symptoms   []struct{ Label string }
	Components []struct{ Label string }
	Related    []struct {
		ID           string
		Title        string
		Organization struct{ Name string }
		Related      []struct{ ID string }
	}
	RecurrenceOf *struct{ ID, Title string }
	Recurrences  []struct{ ID string }
}

// linkTop makes sure the newest incident has every relation the list page
// asks for, two levels deep, so that first: 1 exercises every loader too.
func linkTop(incs []*incidentlib.Incident) {
	newest := 0
	for i, inc := range incs {
		if inc.Date > incs[newest].Date || (inc.Date == incs[newest].Date && inc.ID < incs[newest].ID) {
			newest = i
		}
	}
	top := incs[newest]
	var withRelated, plain []*incidentlib.Incident
	for _, inc := range incs {
		if inc == top || inc.OrgSlug == top.OrgSlug {
			continue
		}
		if len(inc.Related) > 0 && inc.RecurrenceOf == "" {
			withRelated = append(withRelated, inc)
		}
		if len(inc.Related) == 0 && inc.RecurrenceOf == "" {
			plain = append(plain, inc)
		}
	}
	top.Related = []string{withRelated[0].ID}
	top.RecurrenceOf = plain[0].ID
	plain[1].RecurrenceOf = top.ID
}

// TestNoNPlusOne proves that a list page costs a number of store reads and
// loader batches bounded by the query's depth, not by the page size, and
// that batched results equal one-by-one lookups.
func TestNoNPlusOne(t *testing.T) {
	const incidentKeys = `incidentlib_dataloader_keys_total{loader="incident"}`
	n := 10_000
	if testing.Short() {
		n = 2000
	}
	incs := corpus(t, n, 21)
	linkTop(incs)
	ts := newTestServer(t, incs)
	type cost struct {
		tx      uint64
		batches map[string]float64
		keys    float64 // of the incident loader
	}
	costs := map[int]cost{}
	for _, size := range []int{100, 20, 1} {
		batchesBefore := metricValues(t, ts, "incidentlib_dataloader_batches_total")
		keysBefore := metricValues(t, ts, incidentKeys)[incidentKeys]
		txBefore := readTxTotal(ts.DB)
		var page listPage
		ts.data(t, listPageQuery, map[string]any{"n": size}, &page)
		txAfter := readTxTotal(ts.DB)
		batchesAfter := metricValues(t, ts, "incidentlib_dataloader_batches_total")
		c := cost{tx: uint64(txAfter - txBefore), batches: map[string]float64{}}
		c.keys = metricValues(t, ts, incidentKeys)[incidentKeys] - keysBefore
		for k, v := range batchesAfter {
			c.batches[k] = v - batchesBefore[k]
		}
		costs[size] = c
		if len(page.Incidents.Nodes) != size {
			t.Fatalf("first: %d gave %d nodes", size, len(page.Incidents.Nodes))
		}
		checkAgainstLookups(t, ts, page.Incidents.Nodes)
		t.Logf("first: %d: %d read transactions, %.0f incident keys, batches %v", size, c.tx, c.keys, c.batches)
	}
	// The batches are counted: every loader the query uses read at least
	// once, and the incident loader's keys grow with the page while its
	// batches do not.
	for _, l := range []string{"incident", "organization", "recurrences", "count"} {
		if b := costs[100].batches[`incidentlib_dataloader_batches_total{loader="`+l+`"}`]; b < 1 {
			t.Errorf("loader %s: %v batches counted for the list page", l, b)
		}
	}
	if costs[1].keys < 1 || costs[100].keys < 100 || costs[100].keys <= costs[20].keys || costs[20].keys <= costs[1].keys {
		t.Errorf("incident loader keys for first 1, 20, 100: %v, %v, %v", costs[1].keys, costs[20].keys, costs[100].keys)
	}
	for _, size := range []int{20, 1} {
		if costs[size].tx != costs[100].tx {
			t.Errorf("read transactions: first 100 took %d, first %d took %d", costs[100].tx, size, costs[size].tx)
		}
		if !reflect.DeepEqual(costs[size].batches, costs[100].batches) {
			t.Errorf("loader batches: first 100 %v, first %d %v", costs[100].batches, size, costs[size].batches)
		}
	}
	// Depth bound: list + 3 levels of relations, a few loaders each.
	if costs[100].tx > 12 {
		t.Errorf("%d read transactions for a query three levels deep", costs[100].tx)
	}
}

// checkAgainstLookups rebuilds every node with plain one-by-one store
// lookups and compares.
func checkAgainstLookups(t *testing.T, ts *testServer, nodes []listNode) {
	t.Helper()
	ctx := context.Background()
	tax := ts.DB.Taxonomies().Taxonomy()
	one := func(id string) *incidentlib.Incident {
		got, err := ts.DB.Incidents().FindIncidentsByIDs(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		return got[0]
	}
	count := func(slug string) int {
		n, err := ts.DB.Incidents().CountIncidents(ctx, incidentlib.IncidentFilter{Organizations: []string{slug}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, node := range nodes {
		inc := one(node.ID)
		var want listNode
		want.ID, want.Title = inc.ID, inc.Title.In(incidentlib.LangEn)
		want.Organization.Name, want.Organization.IncidentCount = inc.Org, count(inc.OrgSlug)
		for _, s := range inc.Symptoms {
			want.Symptoms = append(want.Symptoms, struct{ Label string }{tax.Term(incidentlib.KindSymptom, s).Label.En})
		}
		for _, s := range inc.Components {
			want.Components = append(want.Components, struct{ Label string }{tax.Term(incidentlib.KindComponent, s).Label.En})
		}
		for _, r := range inc.Related {
			ri := one(r)
			e := want.Related
			e = append(e, struct {
				ID           string
				Title        string
				Organization struct{ Name string }
				Related      []struct{ ID string }
			}{ID: ri.ID, Title: ri.Title.In(incidentlib.LangEn), Organization: struct{ Name string }{ri.Org}})
			for _, rr := range ri.Related {
				e[len(e)-1].Related = append(e[len(e)-1].Related, struct{ ID string }{one(rr).ID})
			}
			want.Related = e
		}
		if inc.RecurrenceOf != "" {
			ro := one(inc.RecurrenceOf)
			want.RecurrenceOf = &struct{ ID, Title string }{ro.ID, ro.Title.In(incidentlib.LangEn)}
		}
		recs, err := ts.DB.Incidents().RecurrenceIDs(ctx, []string{inc.ID})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(recs[0])
		for _, r := range recs[0] {
			want.Recurrences = append(want.Recurrences, struct{ ID string }{one(r).ID})
		}
		normalize := func(n *listNode) string { b, _ := json.Marshal(n); return string(b) }
		got := node
		for _, l := range []*listNode{&got, &want} {
			if len(l.Symptoms) == 0 {
				l.Symptoms = nil
			}
			if len(l.Components) == 0 {
				l.Components = nil
			}
			if len(l.Related) == 0 {
				l.Related = nil
			}
			if len(l.Recurrences) == 0 {
				l.Recurrences = nil
			}
			for i := range l.Related {
				if len(l.Related[i].Related) == 0 {
					l.Related[i].Related = nil
				}
			}
		}
		if normalize(&got) != normalize(&want) {
			t.Fatalf("incident %s differs from one-by-one lookups:\n got %s\nwant %s", node.ID, normalize(&got), normalize(&want))
		}
	}
}
