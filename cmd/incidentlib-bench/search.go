package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

type searchBench struct {
	clients   int
	queries   int
	batch     int
	page      int
	http      bool
	profile   string
	gcPercent int
	turns     int
	glossary  bool
	compare   int
}

func (b *searchBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.clients, "clients", 8, "concurrent clients")
	fs.IntVar(&b.queries, "queries", 800, "queries per class, spread over the clients")
	fs.IntVar(&b.batch, "batch", 2000, "changes per index batch while building")
	fs.IntVar(&b.page, "first", 20, "hits per page (each with highlights)")
	fs.BoolVar(&b.http, "http", true, "also send the queries through the GraphQL API over loopback")
	fs.IntVar(&b.turns, "search-concurrency", runtime.GOMAXPROCS(0), "searches run at once, as serve --search-concurrency (the others wait in line)")
	fs.IntVar(&b.gcPercent, "gc-percent", server.DefaultGCPercent, "garbage collector budget in percent of the live heap, as serve --gc-percent")
	fs.BoolVar(&b.glossary, "glossary", true, "translate queries through the built-in glossary, as serve does (false: each language's words alone, as before the glossary)")
	fs.IntVar(&b.compare, "compare", 0, "rounds of the queries in process with the glossary and without it (a second index of the same store), alternating, after the table (0: none; needs -glossary)")
	fs.StringVar(&b.profile, "cpuprofile", "", "write CPU profiles of the build, of the queries and of the queries over HTTP to PREFIX.build.pprof, PREFIX.query.pprof and PREFIX.http.pprof")
}

func (b *searchBench) check() error {
	if b.clients < 1 || b.queries < b.clients || b.batch < 1 || b.page < 1 || b.page > incidentlib.MaxPageSize || b.turns < 1 || b.compare < 0 || (b.compare > 0 && !b.glossary) {
		return errors.New("-clients at least 1, -queries at least -clients, -batch at least 1, -first 1 to 100, -search-concurrency at least 1, -compare at least 0 and only with -glossary")
	}
	return nil
}

func (b *searchBench) runIn(ctx context.Context, c *corpus, dir string, stdout io.Writer) error {
	if _, err := server.SetGCPercent(b.gcPercent); err != nil {
		return fmt.Errorf("-gc-percent: %w", err)
	}
	tax := seeds.MustTaxonomy()
	fmt.Fprintf(stdout, "search: %d incidents, %d clients, %d queries per class, GOMAXPROCS %d, gc-percent %d, search-concurrency %d, glossary %v\n", c.incidents, b.clients, b.queries, runtime.GOMAXPROCS(0), b.gcPercent, b.turns, b.glossary)
	dbPath := filepath.Join(dir, "search.db")
	// A record cache that holds the store, as a server of this size would
	// be configured (--record-cache), warmed before the HTTP measurement.
	// Links play no part in search.
	db, incs, err := c.store(ctx, dbPath, true, storage.Options{Taxonomy: tax, NoSync: true, RecordCache: max(10_000, c.incidents)}, stdout)
	if err != nil {
		return err
	}
	defer db.Close()

	idxPath := dbPath + ".search"
	os.RemoveAll(idxPath)
	heap0 := searchHeap()
	stopProfile, err := b.startProfile("build")
	if err != nil {
		return err
	}
	start := time.Now()
	cpu0 := searchCPU()
	opts := search.Options{BatchSize: b.batch, StoreID: db.StoreID(), Concurrency: b.turns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if b.glossary {
		if opts.Glossary, err = seeds.GlossaryReader(); err != nil {
			return err
		}
	}
	x, err := search.Open(ctx, db.Incidents(), idxPath, opts)
	if err != nil {
		return err
	}
	defer x.Close()
	build := time.Since(start)
	buildCPU := searchCPU() - cpu0
	stopProfile()
	n, err := x.DocCount()
	if err != nil {
		return err
	}
	size := x.DiskBytes()
	fmt.Fprintf(stdout, "index build: %d incidents in %s = %.0f incidents/s (target at least 5,000/s); %.1f MiB on disk (%.0f bytes per incident)\n",
		n, build.Round(time.Millisecond), float64(n)/build.Seconds(), float64(size)/(1<<20), float64(size)/float64(n))
	fmt.Fprintf(stdout, "index build CPU: %.2f ms per incident (user+system, all threads): at most %.0f incidents/s on %d idle cores\n",
		searchMs(buildCPU)/float64(n), float64(runtime.NumCPU())*float64(n)/buildCPU.Seconds(), runtime.NumCPU())
	fmt.Fprintf(stdout, "index in memory: %.0f MiB of live heap\n", float64(searchHeap()-heap0)/(1<<20))

	classes := b.queryClasses(ctx, c.seed, x, incs)
	// The record cache is warmed here, outside the query profile: the
	// GraphQL measurement reads the hits' records.
	ids := make([]string, 0, 1000)
	for i, inc := range incs {
		ids = append(ids, inc.ID)
		if len(ids) == cap(ids) || i == len(incs)-1 {
			if _, err := db.Incidents().FindIncidentsByIDs(ctx, ids); err != nil {
				return err
			}
			ids = ids[:0]
		}
	}
	if stopProfile, err = b.startProfile("query"); err != nil {
		return err
	}
	w := stdout // rows as they are measured
	err = searchTable(w, classes, func(qs []benchQuery, filtered bool) ([]time.Duration, float64, error) {
		return b.measure(ctx, x, qs, filtered)
	})
	stopProfile()
	if err != nil {
		return err
	}
	if b.compare > 0 {
		if err := b.compareGlossary(ctx, db, x, idxPath, classes, w); err != nil {
			return err
		}
	}
	if !b.http {
		return nil
	}

	// The same queries through the GraphQL API over loopback: each client
	// a keep-alive connection, the latency counted from the request's
	// sending, so the wait for a core is part of it, as it is for a user.
	url, stop, err := serveUncached(db, x)
	if err != nil {
		return err
	}
	defer stop()
	client := newBenchClient(b.clients)
	defer client.CloseIdleConnections()
	if stopProfile, err = b.startProfile("http"); err != nil {
		return err
	}
	defer stopProfile()
	fmt.Fprintf(w, "\nover HTTP: search(query:, filter:, first: %d) { totalCount edges { score highlights { field lang snippet } node { id title } } } through the GraphQL API, %d keep-alive connections\n", b.page, b.clients)
	err = searchTable(w, classes, func(qs []benchQuery, filtered bool) ([]time.Duration, float64, error) {
		return b.measureHTTP(ctx, client, url+"/graphql", qs, filtered)
	})
	if err != nil {
		return fmt.Errorf("over HTTP: %w", err)
	}
	fmt.Fprintf(w, "CPU per query over HTTP counts the whole process: server, GraphQL and the clients.\n")
	return nil
}

// searchTable measures every class without and with a filter and prints
// a row for each as it is measured.
func searchTable(w io.Writer, classes []queryClass, measure func(qs []benchQuery, filtered bool) ([]time.Duration, float64, error)) error {
	const row = "%8s %8s %8s %8s %8s %10s %13s\n"
	fmt.Fprintf(w, row, "class", "filter", "p50 ms", "p99 ms", "max ms", "mean hits", "CPU ms/query")
	for _, c := range classes {
		for _, filtered := range []bool{false, true} {
			f := "none"
			if filtered {
				f = "domain"
			}
			cpu0 := searchCPU()
			var lat []time.Duration
			var hits float64
			var err error
			// Labelled, so that a profile can be cut by class
			// (go tool pprof -tagfocus class=Korean,filter=none).
			pprof.Do(context.Background(), pprof.Labels("class", c.name, "filter", f), func(context.Context) {
				lat, hits, err = measure(c.queries, filtered)
			})
			cpu := searchCPU() - cpu0
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			fmt.Fprintf(w, row, c.name, f, fmt.Sprintf("%.2f", searchMs(searchPct(lat, 50))), fmt.Sprintf("%.2f", searchMs(searchPct(lat, 99))),
				fmt.Sprintf("%.2f", searchMs(lat[len(lat)-1])), fmt.Sprintf("%.0f", hits), fmt.Sprintf("%.2f", searchMs(cpu)/float64(len(lat))))
		}
	}
	fmt.Fprintf(w, row, "target", "", "", "20.00", "", "", "")
	return nil
}

const searchPageQuery = `query Search($q: String!, $f: IncidentFilter, $n: Int) { search(query: $q, filter: $f, first: $n) { totalCount edges { score highlights { field lang snippet } node { id title } } } }`

// measureHTTP sends the queries through the GraphQL API over b.clients
// keep-alive connections and returns the sorted latencies and the mean
// total count. The request bodies are made before, and a response is
// checked for its status, for errors and for its totalCount without
// decoding the rest: the load generator shares the two cores with the
// server, so it does as little as it can.
func (b *searchBench) measureHTTP(ctx context.Context, client *http.Client, url string, qs []benchQuery, filtered bool) ([]time.Duration, float64, error) {
	bodies := make([][]byte, len(qs))
	for i, q := range qs {
		vars := map[string]any{"q": q.q, "n": b.page}
		if filtered {
			vars["f"] = map[string]any{"domains": []string{q.domain}}
		}
		bodies[i], _ = json.Marshal(map[string]any{"query": searchPageQuery, "variables": vars})
	}
	return b.runClients(qs, func() func(i int) (int, error) {
		buf := make([]byte, 0, 64<<10) // one client's, reused
		return func(i int) (int, error) {
			raw, err := loadTarget{url: url, body: bodies[i]}.do(ctx, client, buf)
			if err != nil {
				return 0, err
			}
			buf = raw[:0]
			n, ok := totalCountOf(raw)
			if !ok || bytes.Contains(raw, []byte(`"errors"`)) {
				return 0, fmt.Errorf("status %d: %.200s", http.StatusOK, raw)
			}
			return n, nil
		}
	})
}

// totalCountOf finds the totalCount in a search response.
func totalCountOf(raw []byte) (int, bool) {
	const key = `{"data":{"search":{"totalCount":`
	if !bytes.HasPrefix(raw, []byte(key)) {
		return 0, false
	}
	n, ok := 0, false
	for _, c := range raw[len(key):] {
		if c < '0' || c > '9' {
			break
		}
		n, ok = n*10+int(c-'0'), true
	}
	return n, ok
}

// startProfile starts a CPU profile into PREFIX.name.pprof when
// -cpuprofile is set; the function returned stops it.
func (b *searchBench) startProfile(name string) (func(), error) {
	if b.profile == "" {
		return func() {}, nil
	}
	f, err := os.Create(b.profile + "." + name + ".pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

type benchQuery struct {
	q      string
	domain string // the filter of the filtered run: a domain of the incident the query came from
}

type queryClass struct {
	name    string
	queries []benchQuery
}

// queryClasses draws the queries from the corpus, as someone who read an
// incident would search for it: one English word of it, three, two
// adjacent words as a phrase, and the start of a Korean word.
func (b *searchBench) queryClasses(ctx context.Context, seed int64, x *search.Index, incs []*incidentlib.Incident) []queryClass {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	words := func(s string, keep func(string) bool) []string {
		var out []string
		for _, w := range strings.FieldsFunc(s, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
			if keep(w) {
				out = append(out, w)
			}
		}
		return out
	}
	english := func(w string) bool {
		return len(w) >= 4 && !strings.ContainsFunc(w, searchIsHangul) && !searchStopWords[strings.ToLower(w)]
	}
	korean := func(w string) bool { return len([]rune(w)) >= 3 && strings.IndexFunc(w, searchIsHangul) == 0 }
	classes := []queryClass{{name: "1-word"}, {name: "3-word"}, {name: "phrase"}, {name: "Korean"}}
	for len(classes[0].queries) < b.queries || len(classes[1].queries) < b.queries || len(classes[2].queries) < b.queries || len(classes[3].queries) < b.queries {
		inc := incs[r.IntN(len(incs))]
		if len(inc.Domain) == 0 {
			continue
		}
		bq := func(q string) benchQuery { return benchQuery{q: q, domain: inc.Domain[r.IntN(len(inc.Domain))]} }
		add := func(c *queryClass, q string) {
			// Words the analyzer drops (stop words) make no query.
			zero := 0
			if _, err := x.Search(ctx, incidentlib.SearchQuery{Query: q}, incidentlib.PageArgs{First: &zero}); err == nil {
				c.queries = append(c.queries, bq(q))
			}
		}
		en := words(inc.Title.En+" "+inc.Summary.En, english)
		if len(en) >= 3 && len(classes[0].queries) < b.queries {
			add(&classes[0], en[r.IntN(len(en))])
		}
		if len(en) >= 3 && len(classes[1].queries) < b.queries {
			p := r.Perm(len(en))[:3]
			add(&classes[1], en[p[0]]+" "+en[p[1]]+" "+en[p[2]])
		}
		all := words(inc.Summary.En, func(w string) bool { return true })
		if len(all) >= 2 && len(classes[2].queries) < b.queries {
			i := r.IntN(len(all) - 1)
			if english(all[i]) && english(all[i+1]) {
				add(&classes[2], `"`+all[i]+" "+all[i+1]+`"`)
			}
		}
		ko := words(inc.Title.Ko+" "+inc.Summary.Ko, korean)
		if len(ko) > 0 && len(classes[3].queries) < b.queries {
			w := []rune(ko[r.IntN(len(ko))])
			add(&classes[3], string(w[:2+r.IntN(len(w)-1)]))
		}
	}
	return classes
}

var searchStopWords = map[string]bool{"that": true, "with": true, "from": true, "this": true, "were": true, "when": true, "which": true, "they": true, "their": true, "then": true, "than": true, "there": true, "into": true, "have": true, "been": true, "only": true, "after": true}

func searchIsHangul(r rune) bool { return unicode.Is(unicode.Hangul, r) }

// measure runs the queries over b.clients goroutines and returns the
// sorted latencies and the mean total count.
func (b *searchBench) measure(ctx context.Context, x *search.Index, qs []benchQuery, filtered bool) ([]time.Duration, float64, error) {
	first := b.page
	return b.runClients(qs, func() func(i int) (int, error) {
		return func(i int) (int, error) {
			q := incidentlib.SearchQuery{Query: qs[i].q}
			if filtered {
				q.Filter.Domains = []string{qs[i].domain}
			}
			p, err := x.Search(ctx, q, incidentlib.PageArgs{First: &first})
			if err != nil {
				return 0, err
			}
			return p.TotalCount, nil
		}
	})
}

// runClients sends the queries from b.clients goroutines, each its share
// in turn through the function newClient makes for it (which returns the
// total count), and returns the sorted latencies and the mean count.
func (b *searchBench) runClients(qs []benchQuery, newClient func() func(i int) (int, error)) ([]time.Duration, float64, error) {
	lat := make([]time.Duration, len(qs))
	hits := make([]int, len(qs))
	var wg sync.WaitGroup
	errs := make(chan error, b.clients)
	for c := range b.clients {
		wg.Add(1)
		query := newClient()
		go func() {
			defer wg.Done()
			for i := c; i < len(qs); i += b.clients {
				t := time.Now()
				n, err := query(i)
				lat[i] = time.Since(t)
				if err != nil {
					errs <- fmt.Errorf("%q: %w", qs[i].q, err)
					return
				}
				hits[i] = n
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, 0, err
	}
	slices.Sort(lat)
	sum := 0
	for _, h := range hits {
		sum += h
	}
	return lat, float64(sum) / float64(len(hits)), nil
}

func searchPct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

func searchMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// searchHeap is the live heap after collections (two: the second empties
// the pools of scratch memory).
func searchHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// searchCPU is the CPU time of the process so far.
func searchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
