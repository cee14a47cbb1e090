package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
	"github.com/incidentlib/incidentlib/tracing"
)

func init() {
	registerCommand("graphql", "GraphQL list page and incident page against a static handler, over loopback", func() command { return &graphqlBench{} })
}

// ListPageQuery is a frontend's list page: one page of incidents with their
// organization, terms, related incidents two levels deep and recurrence
// links.
const ListPageQuery = `query ListPage($first: Int) { incidents(first: $first) { nodes { id title organization { name incidentCount } symptoms { label } components { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id } } } }`

// IncidentPageQuery is one incident's page with its relations.
const IncidentPageQuery = `query IncidentPage($id: ID!) { incident(id: $id) { id title summary date organization { name incidentCount } domains { label } symptoms { label } components { label } rootCause { label } severity { label } related { id title organization { name } related { id } } recurrenceOf { id title } recurrences { id title } } }`

// executionConfig is the server that graphql and instr measure: serve
// --prod settings with the whole-response cache off, so that every request
// is executed.
var executionConfig = server.Config{Prod: true, ResponseCacheBytes: -1}

type graphqlBench struct {
	load     loadFlags
	dump     string
	profiled string // which target's first measurement -cpuprofile and the others profile
}

func (b *graphqlBench) declare(fs *flag.FlagSet) {
	b.load.register(fs, "the first round's list page measurement", clientTransport)
	fs.StringVar(&b.dump, "dump", "", "write the responses of the two queries into this directory")
	fs.StringVar(&b.profiled, "profiled", profiledList, "the target -cpuprofile, -memprofile and -trace profile (first round): "+profiledList+", "+profiledDate+" or "+profiledDateSymptom)
}

func (b *graphqlBench) check() error {
	if b.profiled != profiledList && b.profiled != profiledDate && b.profiled != profiledDateSymptom {
		return fmt.Errorf("-profiled must be %s, %s or %s, got %q", profiledList, profiledDate, profiledDateSymptom, b.profiled)
	}
	return b.load.check()
}

func (b *graphqlBench) run(ctx context.Context, stdout io.Writer) error {
	old := debug.SetGCPercent(b.load.gcPercent)
	defer debug.SetGCPercent(old)
	db, corpus, done, err := tempStreamed(ctx, "graphql", b.load.count, b.load.seed, stdout) // streamcorpus.go
	if err != nil {
		return err
	}
	defer done()
	fmt.Fprintf(stdout, "graphql: store filled; peak RSS so far %.0f MiB\n", peakRSS())
	// Traces as serve has them: on when OTEL_EXPORTER_OTLP_ENDPOINT is set
	// (docs/tracing.md), to measure their cost; off otherwise.
	stopTracing, err := tracing.Setup(ctx, os.Getenv)
	if err != nil {
		return err
	}
	defer func() { _ = stopTracing(context.WithoutCancel(ctx)) }()

	srv, err := newServer(db, nil, executionConfig, nil)
	if err != nil {
		return err
	}
	srv.SetReady(true)
	timer := &handlerTimer{h: srv}
	gqlURL, stopGQL, err := listenTurns(timer, b.load.takeTurns)
	if err != nil {
		return err
	}
	defer stopGQL()
	// The same store and configuration through gqlgen's executor alone, for
	// the list page: what graph.FastReads saves.
	genericConfig := executionConfig
	genericConfig.GenericExecutor = true
	generic, err := newServer(db, nil, genericConfig, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	generic.SetReady(true)
	genericURL, stopGeneric, err := listenTurns(generic, b.load.takeTurns)
	if err != nil {
		return err
	}
	defer stopGeneric()

	client := newLoadClient(b.load.concurrency, b.load.client)
	defer client.close()

	listBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": map[string]any{"first": b.load.first}})
	id, symptom := corpus.rich, corpus.symptom
	// A server that has run for a while holds the records it was asked for
	// decoded in its record cache: read them once (every record, up to
	// maxWarmRecords), so that the live heap (and with it how often the
	// collector runs) is that server's.
	if err := warmRecords(ctx, db, corpus.ids(maxWarmRecords)); err != nil {
		return err
	}
	incBody, _ := json.Marshal(map[string]any{"query": IncidentPageQuery, "variables": map[string]any{"id": id}})

	listResp, listHeader, err := fetch(ctx, client.http, gqlURL+"/graphql", listBody)
	if err != nil {
		return fmt.Errorf("list page: %w", err)
	}
	incResp, _, err := fetch(ctx, client.http, gqlURL+"/graphql", incBody)
	if err != nil {
		return fmt.Errorf("incident page: %w", err)
	}
	for name, resp := range map[string][]byte{"list page": listResp, "incident page": incResp} {
		if bytes.Contains(resp, []byte(`"errors"`)) || !bytes.HasPrefix(resp, []byte(`{"data":`)) {
			return fmt.Errorf("%s: the response has errors: %.300s", name, resp)
		}
	}
	if b.dump != "" {
		if err := os.MkdirAll(b.dump, 0o755); err != nil {
			return err
		}
		for name, resp := range map[string][]byte{"list.json": listResp, "incident.json": incResp} {
			if err := os.WriteFile(filepath.Join(b.dump, name), resp, 0o644); err != nil {
				return err
			}
		}
	}

	staticURL, stopStatic, err := listen(staticHandler(listResp, listHeader))
	if err != nil {
		return err
	}
	defer stopStatic()

	targets := []loadTarget{
		{name: fmt.Sprintf("list page (first: %d)", b.load.first), url: gqlURL + "/graphql", body: listBody, want: listResp, timer: timer},
		{name: "incident page (" + id + ")", url: gqlURL + "/graphql", body: incBody, want: incResp, timer: timer},
		{name: "static handler, same bytes as the list page", url: staticURL + "/graphql", body: listBody, want: listResp},
		{name: "list page, gqlgen's executor only", url: genericURL + "/graphql", body: listBody, want: listResp},
	}
	// The filtered list pages (filtered.go): a date range varied per
	// request, alone and with one symptom, in the query's variables.
	for _, fl := range []struct{ name, symptom string }{{profiledDate, ""}, {profiledDateSymptom, symptom}} {
		bodies := dateRangeBodies(b.load.first, fl.symptom)
		want, _, err := fetch(ctx, client.http, gqlURL+"/graphql", bodies[0])
		if err != nil || bytes.Contains(want, []byte(`"errors"`)) {
			return fmt.Errorf("%s list page: %v %.300s", fl.name, err, want)
		}
		targets = append(targets, loadTarget{name: "list page, " + fl.name + " varied per request", url: gqlURL + "/graphql", bodies: bodies, want: want, timer: timer})
	}
	profiledTarget := map[string]int{profiledList: 0, profiledDate: 4, profiledDateSymptom: 5}[b.profiled]

	b.load.printSettings(stdout, "graphql")
	fmt.Fprintf(stdout, "graphql: list page response %d bytes sha256 %s; incident page %d bytes sha256 %s\n",
		len(listResp), sha(listResp), len(incResp), sha(incResp))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(stdout, "graphql: live heap %.1f MiB with %d records decoded in the record cache; the collector lets it grow to %.1f MiB\n",
		float64(ms.HeapAlloc)/(1<<20), min(b.load.count, maxWarmRecords), float64(ms.NextGC)/(1<<20))

	if err := b.load.warmUp(ctx, client, targets); err != nil {
		return err
	}
	results, err := b.load.measureRounds(ctx, client, targets, profiledTarget, func(round, i int, results [][]result) error {
		r := results[i][round]
		fmt.Fprintf(stdout, "  round %d %-46s %7.0f req/s  p50 %7s  p99 %7s  arrival p50 %7s  p99 %7s  CPU %7s/req  %6.0f allocs/req %8.0f B/req\n",
			round+1, targets[i].name, r.rps(), round3(r.p50), round3(r.p99), orDash(r.arrivalP50), orDash(r.arrivalP99), round3(r.cpu), r.allocs, r.bytes)
		return nil
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "\nmedian of %d interleaved rounds of %s, %d connections (client %s), gc-percent %d, take-turns %v, nproc %d:\n",
		b.load.phases.rounds, b.load.phases.duration, b.load.concurrency, b.load.client, b.load.gcPercent, b.load.takeTurns, runtime.NumCPU())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\treq/s\tp50\tp99\tarrival p50\tp99\tin handler p50\tp99\tCPU/req\tallocs/req\tB/req\terrors\t")
	med := make([]result, len(targets))
	for i, t := range targets {
		med[i] = median(results[i])
		inP50, inP99 := "-", "-"
		if t.timer != nil {
			inP50, inP99 = round3(med[i].inHandlerP50), round3(med[i].inHandlerP99)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t%d\t\n", t.name, med[i].rps(), round3(med[i].p50), round3(med[i].p99),
			orDash(med[i].arrivalP50), orDash(med[i].arrivalP99), inP50, inP99, round3(med[i].cpu), med[i].allocs, med[i].bytes, med[i].errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ratio := med[0].rps() / med[2].rps()
	fmt.Fprintf(stdout, "ratio list page / static handler: %.3f (target at least 0.25); list page p99 %s at the reader, %s to arrival (target at most 10ms)\n",
		ratio, round3(med[0].p99), orDash(med[0].arrivalP99))
	fmt.Fprintf(stdout, "p50/p99: from writing a request to reading its answer's last byte in the load generator's goroutine, which waits for a core like the server's; arrival: to the answer's last bytes reaching the socket (the kernel's receive timestamp, on Linux)\n")
	// Little's law: with every connection always waiting for its answer,
	// the mean latency is the connections over the rate.
	fmt.Fprintf(stdout, "mean latency = connections / rate: list page %s, static handler %s; time in the handler: p50 %s, p99 %s (the rest is waiting for a core, in the server and in the load generator)\n",
		round3(time.Duration(float64(b.load.concurrency)/med[0].rps()*float64(time.Second))), round3(time.Duration(float64(b.load.concurrency)/med[2].rps()*float64(time.Second))),
		round3(med[0].inHandlerP50), round3(med[0].inHandlerP99))
	if med[0].cpu > 0 {
		fmt.Fprintf(stdout, "CPU ratio static / list page per request: %.3f (the same ratio measured in CPU time, which moves less when the machine is busy)\n",
			float64(med[2].cpu)/float64(med[0].cpu))
	}
	for i := 4; i < len(targets); i++ {
		fmt.Fprintf(stdout, "%s / list page: %.3f; / static handler: %.3f (req/s)\n", targets[i].name, med[i].rps()/med[0].rps(), med[i].rps()/med[2].rps())
	}
	fmt.Fprintf(stdout, "list page through graph.FastReads / through gqlgen's executor: %.1fx the req/s, %.1fx less CPU per request\n",
		med[0].rps()/med[3].rps(), float64(med[3].cpu)/float64(max(med[0].cpu, 1)))
	fmt.Fprintf(stdout, "peak RSS of the process (store, servers and load generator): %.0f MiB\n", peakRSS())
	fmt.Fprintf(stdout, "CPU/req, allocs/req and B/req count the whole process (load generator and HTTP included); the static row is that floor.\n")
	for _, rs := range results {
		for _, r := range rs {
			if r.errors > 0 {
				return fmt.Errorf("%d requests failed or returned other bytes", r.errors)
			}
		}
	}
	return nil
}

// staticHandler answers every request with body and the headers of
// header that describe it (Content-Type, Content-Length), as a server sent
// them: the HTTP limit a server's rate is compared with.
func staticHandler(body []byte, header http.Header) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for _, k := range []string{"Content-Type", "Content-Length"} {
			if v := header.Get(k); v != "" {
				w.Header().Set(k, v)
			}
		}
		_, _ = w.Write(body)
	})
}

// warmRecords reads every incident of ids once, so that the store's
// record cache holds them all, as a server's does after it has run for a
// while.
func warmRecords(ctx context.Context, db *storage.DB, ids []string) error {
	for i := 0; i < len(ids); i += 1000 {
		if _, err := db.Incidents().FindIncidentsByIDs(ctx, ids[i:min(i+1000, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// fetch posts body once and returns the response with its headers.
func fetch(ctx context.Context, client *http.Client, url string, body []byte) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	return b, resp.Header, nil
}

// listen serves h on a loopback port as serve does by default, in
// net/http's own order of keep-alive connections.
func listen(h http.Handler) (url string, stop func(), err error) {
	return listenTurns(h, false)
}

// listenTurns is listen with serve's --take-turns: with turns set, the
// connections take turns (server.TakeTurns). The static handlers, the
// HTTP limit the servers are compared with, never do.
func listenTurns(h http.Handler, turns bool) (url string, stop func(), err error) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	if turns {
		server.TakeTurns(hs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = hs.Close() }, nil
}

// tempGenerated is openGenerated in a new temporary directory, announced
// on stdout as "NAME: generating and importing ..."; done closes the
// store and removes the directory.
func tempGenerated(ctx context.Context, name string, count int, seed int64, stdout io.Writer) (db *storage.DB, incs []*incidentlib.Incident, done func(), err error) {
	dir, err := os.MkdirTemp("", "incidentlib-bench-"+name+"-")
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(stdout, "%s: generating and importing %d incidents (seed %d)\n", name, count, seed)
	db, incs, err = openGenerated(ctx, filepath.Join(dir, "bench.db"), count, seed)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return db, incs, func() { db.Close(); os.RemoveAll(dir) }, nil
}

// workDir returns dir, made if need be, or when dir is empty a new
// temporary directory that done removes.
func workDir(dir, name string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	d, err := os.MkdirTemp("", "incidentlib-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// openGenerated opens a new store at path holding a generated corpus.
func openGenerated(ctx context.Context, path string, count int, seed int64) (*storage.DB, []*incidentlib.Incident, error) {
	db, tax, err := openStore(path, count)
	if err != nil {
		return nil, nil, err
	}
	incs, err := gen.Generate(gen.Options{Count: count, Seed: seed, Taxonomy: tax})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	if _, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, incs, nil
}

// openStore opens the store at path with the seeds' taxonomy and a record
// cache for count incidents (10,000 at least), as the benchmarks use it.
func openStore(path string, count int) (*storage.DB, *incidentlib.Taxonomy, error) {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return nil, nil, err
	}
	db, err := storage.Open(path, storage.Options{Taxonomy: tax, RecordCache: max(10_000, count), NoSync: true})
	return db, tax, err
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

func round3(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Microsecond).String()
}

// orDash is d rounded, or "-" when it was not measured.
func orDash(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return round3(d)
}
