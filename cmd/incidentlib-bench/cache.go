package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

func init() {
	registerCommand("cache", "the list page from the response cache, by POST and by persisted GET, against a static handler and uncached, over loopback", func() command { return &cacheBench{} })
}

type cacheBench struct {
	load    loadFlags
	profile string // the target profiled
}

// The targets of the cache benchmark, by the names -profile takes.
var cacheTargetNames = []string{"static-post", "post", "static-get", "get", "uncached"}

func (b *cacheBench) declare(fs *flag.FlagSet) {
	b.load.register(fs, "the first round's measurement of the -profile target", clientTransport)
	fs.StringVar(&b.profile, "profile", "post", "the target -cpuprofile and -memprofile measure: "+strings.Join(cacheTargetNames, ", ")+" (post and get are the response cache's)")
}

func (b *cacheBench) check() error {
	if err := b.load.check(); err != nil {
		return err
	}
	if !slices.Contains(cacheTargetNames, b.profile) {
		return fmt.Errorf("-profile must be one of %s, got %q", strings.Join(cacheTargetNames, ", "), b.profile)
	}
	return nil
}

func (b *cacheBench) run(ctx context.Context, stdout io.Writer) error {
	db, _, done, err := b.load.openGenerated(ctx, "cache", stdout)
	if err != nil {
		return err
	}
	defer done()

	// Both servers as serve runs them (prod mode, a request log line per
	// request, formatted as JSON and thrown away), over the same store;
	// one with the response cache (the default 64 MiB), one without.
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	cached, err := newServer(db, nil, server.Config{Prod: true, Logger: logger, LogRequests: true}, reg)
	if err != nil {
		return err
	}
	uncached, err := newServer(db, nil, server.Config{Prod: true, Logger: logger, LogRequests: true, ResponseCacheBytes: -1}, nil)
	if err != nil {
		return err
	}
	var urls [2]string
	for i, s := range []*server.Server{cached, uncached} {
		s.SetReady(true)
		u, stop, err := listenTurns(s, b.load.takeTurns)
		if err != nil {
			return err
		}
		defer stop()
		urls[i] = u + "/graphql"
	}

	client := newLoadClient(b.load.concurrency, b.load.client)
	defer client.close()

	vars := map[string]any{"first": b.load.first}
	varsJSON, _ := json.Marshal(vars)
	hash := gqledge.DocumentHash(ListPageQuery)
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}
	extJSON, _ := json.Marshal(ext)
	postBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": vars})
	registerBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": vars, "extensions": ext})
	getQuery := "?" + url.Values{"extensions": {string(extJSON)}, "variables": {string(varsJSON)}}.Encode()

	// The reference bytes come from the uncached server; every target must
	// answer exactly them. Registering the hash by POST is what an APQ
	// client does once.
	want, err := loadTarget{method: http.MethodPost, url: urls[1], body: postBody}.do(ctx, client.http, nil)
	if err != nil {
		return fmt.Errorf("list page: %w", err)
	}
	if bytes.Contains(want, []byte(`"errors"`)) {
		return fmt.Errorf("the list page has errors: %.300s", want)
	}
	if _, err := (loadTarget{method: http.MethodPost, url: urls[0], body: registerBody}).do(ctx, client.http, nil); err != nil {
		return fmt.Errorf("register the persisted query: %w", err)
	}
	contentType := "application/graphql-response+json"
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(want)
	})
	staticURL, stopStatic, err := listen(static)
	if err != nil {
		return err
	}
	defer stopStatic()

	targets := []loadTarget{
		{name: "static handler, POST", method: http.MethodPost, url: staticURL + "/graphql", body: postBody, want: want},
		{name: "response cache, POST", method: http.MethodPost, url: urls[0], body: postBody, want: want},
		{name: "static handler, GET", method: http.MethodGet, url: staticURL + "/graphql" + getQuery, want: want},
		{name: "response cache, persisted GET", method: http.MethodGet, url: urls[0] + getQuery, want: want},
		{name: "uncached, POST", method: http.MethodPost, url: urls[1], body: postBody, want: want},
	}
	b.load.printSettings(stdout, "cache")
	fmt.Fprintf(stdout, "cache: list page (first: %d) response %d bytes sha256 %s; persisted GET %s\n", b.load.first, len(want), sha(want), strings.TrimPrefix(getQuery, "?")[:60]+"…")

	if err := b.load.warmUp(ctx, client, targets); err != nil {
		return err
	}
	hitsBefore, missesBefore := cacheOutcomes(reg)
	results, err := b.load.measureRounds(ctx, client, targets, slices.Index(cacheTargetNames, b.profile), func(round, i int, results [][]result) error {
		r := results[i][round]
		fmt.Fprintf(stdout, "  round %d %-32s %9.0f req/s  p50 %7s  p99 %7s  CPU %7s/req  %6.0f allocs/req %8.0f B/req\n",
			round+1, targets[i].name, r.rps(), round3(r.p50), round3(r.p99), round3(r.cpu), r.allocs, r.bytes)
		return nil
	})
	if err != nil {
		return err
	}
	hits, misses := cacheOutcomes(reg)

	fmt.Fprintf(stdout, "\nmedian of %d interleaved rounds of %s, %d connections (client %s), take-turns %v, nproc %d:\n", b.load.phases.rounds, b.load.phases.duration, b.load.concurrency, b.load.client, b.load.takeTurns, runtime.NumCPU())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\treq/s\tp50\tp99\tCPU/req\tallocs/req\tB/req\terrors\t")
	med := make([]result, len(targets))
	cpu := make([]time.Duration, len(targets))
	for i, t := range targets {
		med[i] = median(results[i])
		cpu[i] = medianCPU(results[i])
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%.0f\t%.0f\t%d\t\n", t.name, med[i].rps(), round3(med[i].p50), round3(med[i].p99), round3(cpu[i]), med[i].allocs, med[i].bytes, med[i].errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := func(name string, c, s result) {
		ratio, p99 := c.rps()/s.rps(), float64(c.p99)/float64(s.p99)
		ok := "meets"
		if ratio < 0.7 || p99 > 2 {
			ok = "MISSES"
		}
		fmt.Fprintf(stdout, "%s: %.3f of the static handler's req/s (target at least 0.7), p99 %.2fx the static handler's (target at most 2x): %s the target\n", name, ratio, p99, ok)
	}
	verdict("response cache, POST", med[1], med[0])
	verdict("response cache, persisted GET", med[3], med[2])
	fmt.Fprintf(stdout, "CPU per request (the whole process, load generator included), static over cached: POST %.3f, GET %.3f\n",
		float64(cpu[0])/float64(cpu[1]), float64(cpu[2])/float64(cpu[3]))
	fmt.Fprintf(stdout, "uncached POST: %.3f of the static handler's req/s; the cache serves %.1fx the uncached rate\n", med[4].rps()/med[0].rps(), med[1].rps()/med[4].rps())
	fmt.Fprintf(stdout, "response cache during the measured rounds: %.0f hits, %.0f misses\n", hits-hitsBefore, misses-missesBefore)
	for _, rs := range results {
		for _, r := range rs {
			if r.errors > 0 {
				return fmt.Errorf("%d requests failed or returned other bytes", r.errors)
			}
		}
	}
	if misses-missesBefore > 0 {
		return fmt.Errorf("the response cache missed %.0f times with no write", misses-missesBefore)
	}
	return nil
}

// cacheOutcomes reads the response cache's hit and miss counters.
func cacheOutcomes(g prometheus.Gatherer) (hits, misses float64) {
	fams, err := g.Gather()
	if err != nil {
		return 0, 0
	}
	for _, f := range fams {
		if f.GetName() != "incidentlib_response_cache_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			switch label(m, "outcome") {
			case "hit":
				hits += m.GetCounter().GetValue()
			case "miss", "stale":
				misses += m.GetCounter().GetValue()
			}
		}
	}
	return hits, misses
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
