package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

type statsBench struct {
	queries int
	profile string
}

func (b *statsBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.queries, "queries", 300, "queries per filter, one at a time")
	fs.StringVar(&b.profile, "cpuprofile", "", "write a CPU profile of the queries to this file")
}

func (b *statsBench) check() error {
	if b.queries < 10 {
		return errors.New("-queries at least 10")
	}
	return nil
}

const statsBenchQuery = `query($f: IncidentFilter) { stats(filter: $f) {
  count
  byYear(kind: ROOT_CAUSE) { year term { slug } count }
  durations {
    detectedAfter { count p50Seconds p90Seconds maxSeconds }
    resolvedAfter { count p50Seconds p90Seconds maxSeconds } } } }`

const statsBenchPairs = `query($f: IncidentFilter) { stats(filter: $f) {
  pairs(rows: ROOT_CAUSE, columns: COMPONENT) { row { slug } column { slug } count } } }`

// statsFilters are the filter classes: none, then one field each, with
// values drawn from the corpus.
func statsFilters(orgs []string, tax *incidentlib.Taxonomy) []struct {
	name string
	make func(r *rand.Rand) map[string]any
} {
	slug := func(kind incidentlib.TermKind) func(r *rand.Rand) string {
		terms := tax.Kind(kind)
		return func(r *rand.Rand) string { return terms[r.IntN(len(terms))].Slug }
	}
	type class = struct {
		name string
		make func(r *rand.Rand) map[string]any
	}
	list := func(name, field string, kind incidentlib.TermKind) class {
		s := slug(kind)
		return class{name, func(r *rand.Rand) map[string]any { return map[string]any{field: []string{s(r)}} }}
	}
	return []class{
		{"none", func(*rand.Rand) map[string]any { return nil }},
		list("domains", "domains", incidentlib.KindDomain),
		list("symptoms", "symptoms", incidentlib.KindSymptom),
		list("components", "components", incidentlib.KindComponent),
		list("rootCauses", "rootCauses", incidentlib.KindRootCause),
		list("severities", "severities", incidentlib.KindSeverity),
		{"organizations", func(r *rand.Rand) map[string]any {
			return map[string]any{"organizations": []string{orgs[r.IntN(len(orgs))]}}
		}},
		{"dateFrom+dateTo", func(r *rand.Rand) map[string]any {
			y := 2005 + r.IntN(18)
			return map[string]any{"dateFrom": fmt.Sprintf("%d-03-15", y), "dateTo": fmt.Sprintf("%d-09-30", y+r.IntN(4))}
		}},
		{"reviewed", func(r *rand.Rand) map[string]any { return map[string]any{"reviewed": r.IntN(2) == 0} }},
		{"verification", func(r *rand.Rand) map[string]any {
			return map[string]any{"verification": []string{[]string{"PRIMARY_SOURCE", "SECONDARY_REPORT", "UNKNOWN"}[r.IntN(3)]}}
		}},
	}
}

func (b *statsBench) runIn(ctx context.Context, c *corpus, dir string, stdout io.Writer) error {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stats: %d incidents, %d queries per filter at one client, GOMAXPROCS %d, load average %s\n", c.incidents, b.queries, runtime.GOMAXPROCS(0), loadAvg())
	// Links play no part in the aggregates; a kept -db is reused.
	db, incs, err := c.store(ctx, filepath.Join(dir, "stats.db"), false, storage.Options{Taxonomy: tax, NoSync: true, RecordCache: 10_000}, stdout)
	if err != nil {
		return err
	}
	defer db.Close()
	if b.profile != "" {
		f, err := os.Create(b.profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	// The organizations of the incidents, one per incident (common ones
	// drawn more often); the corpus itself is not read again, so the
	// collection below takes it back and the collector does not walk it
	// during the measurement.
	orgs := make([]string, len(incs))
	for i, inc := range incs {
		orgs[i] = inc.OrgSlug
	}
	runtime.GC()

	url, stop, err := serveUncached(db, nil)
	if err != nil {
		return err
	}
	defer stop()
	client := newBenchClient(1)
	defer client.CloseIdleConnections()
	endpoint := url + "/graphql"

	measure := func(query string, filter func(r *rand.Rand) map[string]any) ([]time.Duration, int, time.Duration, error) {
		r := rand.New(rand.NewPCG(uint64(c.seed), 23))
		lat := make([]time.Duration, 0, b.queries)
		matched := 0
		var cpu0 int64
		for i := range b.queries + b.queries/10 { // the first tenth warms up
			if i == b.queries/10 {
				cpu0 = processCPU()
			}
			body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"f": filter(r)}})
			t0 := time.Now()
			resp, _, err := fetch(ctx, client, endpoint, body)
			d := time.Since(t0)
			if err != nil {
				return nil, 0, 0, err
			}
			var out struct {
				Data struct {
					Stats struct{ Count int }
				}
				Errors []json.RawMessage
			}
			if err := json.Unmarshal(resp, &out); err != nil || len(out.Errors) > 0 {
				return nil, 0, 0, fmt.Errorf("%.300s", resp)
			}
			if i >= b.queries/10 {
				lat = append(lat, d)
				matched += out.Data.Stats.Count
			}
		}
		return lat, matched / b.queries, time.Duration(processCPU()-cpu0) / time.Duration(b.queries), nil
	}
	for _, q := range []struct{ title, query string }{
		{"stats { count byYear(kind: ROOT_CAUSE) durations }", statsBenchQuery},
		{"stats { pairs(rows: ROOT_CAUSE, columns: COMPONENT) }", statsBenchPairs},
	} {
		fmt.Fprintf(stdout, "\n%s through the GraphQL API, one keep-alive connection, response cache off\n", q.title)
		fmt.Fprintf(stdout, "%-16s %12s %9s %9s %9s %9s\n", "filter", "incidents", "p50", "p99", "max", "CPU/q")
		for _, c := range statsFilters(orgs, tax) {
			lat, matched, cpu, err := measure(q.query, c.make)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			fmt.Fprintf(stdout, "%-16s %12d %9s %9s %9s %9s\n", c.name, matched, round3(percentile(lat, 0.50)), round3(percentile(lat, 0.99)), round3(percentile(lat, 1)), round3(cpu))
		}
	}
	fmt.Fprintf(stdout, "\nincidents: the mean number each filter matched (pairs queries do not ask the count: 0); CPU/q: the process's CPU time per query, server and client together (the wait for a core, which the latencies include, is not in it); load average after: %s\n", loadAvg())
	return nil
}
