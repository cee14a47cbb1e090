package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/ops"
	"github.com/incidentlib/incidentlib/outbound"
	"github.com/incidentlib/incidentlib/replica"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
	"github.com/incidentlib/incidentlib/storage"
	"github.com/incidentlib/incidentlib/upstream"
)

// notExported are names the dashboard and the rules may use although no
// incidentlib process exports them, each with the reason. Metrics of a
// feature still being built may be listed here until the feature lands;
// none is now.
var notExported = map[string]string{
	"up": "Prometheus records it for every scrape target",
}

// labelsAddedByPrometheus are the target labels of every scraped series.
var labelsAddedByPrometheus = map[string]bool{"job": true, "instance": true}

// scrape runs a primary with the seeds and a replica that follows it
// through the outbound client and links to it as its upstream, exercises
// the replica's GraphQL endpoint (cache misses and hits, an error, a
// persisted query, a refused mutation) and returns what its /metrics
// exports, by family name.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	ctx := context.Background()
	primaryDB := testutil.OpenSeeded(t, storage.Options{})
	primary, err := testutil.ServerOn(primaryDB, server.Config{}, testutil.ServerParts{})
	if err != nil {
		t.Fatal(err)
	}
	primary.SetReady(true)
	pts := httptest.NewServer(primary)
	t.Cleanup(pts.Close)

	// The replica, wired as serve --follow wires it: one registry for the
	// server, the outbound client, the follower and the upstream links.
	reg := prometheus.NewRegistry()
	replicaDB := testutil.OpenStore(t, storage.Options{})
	client, err := outbound.New(outbound.DefaultConfig(), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	follower, err := replica.New(ctx, replicaDB.Follower(), client, replica.DefaultConfig(pts.URL), reg)
	if err != nil {
		t.Fatal(err)
	}
	fctx, stopFollowing := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() { followed <- follower.Run(fctx) }()
	t.Cleanup(func() { stopFollowing(); <-followed })
	if err := follower.WaitLevel(ctx); err != nil {
		t.Fatal(err)
	}
	up, err := upstream.New(upstream.DefaultConfig(pts.URL), client, reg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := testutil.ServerOn(replicaDB, server.Config{Primary: pts.URL, Upstream: true, ResponseMaxAge: time.Minute},
		testutil.ServerParts{Registry: reg, Incidents: upstream.LocalFirst(replicaDB.Incidents(), up)})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetReady(true)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	post := func(body map[string]any) []byte {
		b, _ := json.Marshal(body)
		resp, err := http.Post(ts.URL+"/graphql", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return out
	}
	list := `query ListPage { incidents(first: 5) { nodes { id title organization { name incidentCount } symptoms { label } related { id } recurrences { id } } } }`
	for i := 0; i < 2; i++ {
		if b := post(map[string]any{"query": list}); !bytes.Contains(b, []byte(`"IL-`)) {
			t.Fatalf("the replica serves no incidents: %s", b)
		}
	}
	post(map[string]any{"query": `query TooMany { incidents(first: 1000) { totalCount } }`})
	post(map[string]any{"query": `mutation { reviewIncident(id: "IL-0213", decision: APPROVE) { userErrors { code } } }`})
	q := `query One { incident(id: "IL-0213") { id } }`
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": sha(q)}}
	post(map[string]any{"query": q, "extensions": ext})
	extJSON, _ := json.Marshal(ext)
	if resp, err := http.Get(ts.URL + "/graphql?extensions=" + url.QueryEscape(string(extJSON))); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	// An upstream that fails once: the client retries (GET is idempotent).
	var calls atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("[]"))
	}))
	t.Cleanup(flaky.Close)
	if _, status, _, err := client.Get(ctx, flaky.URL+"/api/v1/incidents?ids=IL-9999"); err != nil || status != 200 {
		t.Fatalf("flaky upstream: %d %v", status, err)
	}

	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// series is what the rules and the dashboard may name of one family.
type series struct {
	labels map[string]bool
}

// exported maps every name a query may use (histogram and summary series
// included) to the labels its samples carry.
func exported(fams map[string]*dto.MetricFamily) map[string]series {
	out := map[string]series{}
	for name, f := range fams {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		out[name] = series{labels}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			withLE := map[string]bool{"le": true}
			for l := range labels {
				withLE[l] = true
			}
			out[name+"_bucket"] = series{withLE}
			out[name+"_sum"] = series{labels}
			out[name+"_count"] = series{labels}
		case dto.MetricType_SUMMARY:
			withQ := map[string]bool{"quantile": true}
			for l := range labels {
				withQ[l] = true
			}
			out[name] = series{withQ}
			out[name+"_sum"] = series{labels}
			out[name+"_count"] = series{labels}
		}
	}
	return out
}

var (
	stringLit   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	metricName  = regexp.MustCompile(`\b(?:incidentlib|go|process|promhttp)_[a-zA-Z0-9_:]*\b|\bup\b`)
	selector    = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
	matcherName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	grouping    = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// checkExpr checks one PromQL expression against what is exported: every
// metric name, every label in a selector, every label grouped by.
func checkExpr(t *testing.T, where, expr string, have map[string]series) (names []string) {
	t.Helper()
	if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") || strings.Count(expr, "[") != strings.Count(expr, "]") {
		t.Errorf("%s: unbalanced brackets in %s", where, expr)
	}
	bare := stringLit.ReplaceAllString(expr, `""`)
	bare = strings.ReplaceAll(bare, "$__rate_interval", "5m")
	exprLabels := map[string]bool{"le": true}
	for l := range labelsAddedByPrometheus {
		exprLabels[l] = true
	}
	for _, name := range metricName.FindAllString(bare, -1) {
		names = append(names, name)
		s, ok := have[name]
		if !ok {
			if _, allowed := notExported[name]; !allowed {
				t.Errorf("%s: %s is not exported by the server", where, name)
			}
			continue
		}
		for l := range s.labels {
			exprLabels[l] = true
		}
	}
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		name := m[1]
		s, ok := have[name]
		if !ok {
			continue
		}
		for _, lm := range matcherName.FindAllStringSubmatch(m[2], -1) {
			if l := lm[1]; !s.labels[l] && !labelsAddedByPrometheus[l] {
				t.Errorf("%s: %s has no label %s", where, name, l)
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(bare, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !exprLabels[l] {
				t.Errorf("%s: grouped by %s, which none of its metrics carries", where, l)
			}
		}
	}
	return names
}

func sha(s string) string {
	return gqledge.DocumentHash(s)
}

type rules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	GridPos     struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func TestMetricsTheDashboardAndAlertsUse(t *testing.T) {
	have := exported(scrape(t))

	t.Run("Alerts", func(t *testing.T) {
		var rs rules
		if err := yaml.Unmarshal(ops.Alerts, &rs); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		used := map[string]bool{}
		for _, g := range rs.Groups {
			for _, r := range g.Rules {
				if !strings.HasPrefix(r.Alert, "Incidentlib") || seen[r.Alert] {
					t.Errorf("alert name %q: must start with Incidentlib and be unique", r.Alert)
				}
				seen[r.Alert] = true
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
				if s := r.Labels["severity"]; s != "warning" && s != "critical" {
					t.Errorf("%s: severity %q", r.Alert, s)
				}
				if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Errorf("%s: summary and description are needed", r.Alert)
				}
				for _, n := range checkExpr(t, r.Alert, r.Expr, have) {
					used[n] = true
				}
			}
		}
		// The failures of the seeds each have a rule.
		for _, n := range []string{
			"incidentlib_bbolt_write_commit_seconds_bucket", // write latency (seed 000)
			"incidentlib_bbolt_freelist_bytes",              // freelist growth (seed 000)
			"incidentlib_bbolt_free_pages",
			"incidentlib_follow_lag_seconds",     // a replica behind
			"incidentlib_outbound_breaker_state", // an upstream down (seed 004)
			"incidentlib_graphql_errors_total",   // error rate
			"incidentlib_http_requests_total",    // 5xx rate
		} {
			if !used[n] {
				t.Errorf("no alert uses %s", n)
			}
		}
	})

	t.Run("Dashboard", func(t *testing.T) {
		var d struct {
			UID    string `json:"uid"`
			Title  string `json:"title"`
			Inputs []struct {
				Name string `json:"name"`
			} `json:"__inputs"`
			Panels []panel `json:"panels"`
		}
		if err := json.Unmarshal(ops.Dashboard, &d); err != nil {
			t.Fatal(err)
		}
		if d.UID == "" || d.Title == "" || len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" {
			t.Fatalf("uid %q title %q inputs %v", d.UID, d.Title, d.Inputs)
		}
		var all []panel
		for _, p := range d.Panels {
			all = append(all, p)
			all = append(all, p.Panels...)
		}
		ids := map[int]bool{}
		used := map[string]bool{}
		type cell struct{ x, y int }
		taken := map[cell]string{}
		for _, p := range all {
			if ids[p.ID] || p.Title == "" {
				t.Errorf("panel %d %q: ids unique, titles set", p.ID, p.Title)
			}
			ids[p.ID] = true
			g := p.GridPos
			if g.W < 1 || g.X < 0 || g.X+g.W > 24 || g.H < 1 {
				t.Errorf("panel %q: grid position %+v", p.Title, g)
			}
			for x := g.X; x < g.X+g.W; x++ {
				for y := g.Y; y < g.Y+g.H; y++ {
					if other, ok := taken[cell{x, y}]; ok {
						t.Errorf("panels %q and %q overlap", other, p.Title)
						x = g.X + g.W // and out of the outer loop
						break
					}
					taken[cell{x, y}] = p.Title
				}
			}
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 || p.Description == "" {
				t.Errorf("panel %q: a Prometheus data source, a description and targets", p.Title)
			}
			for _, tg := range p.Targets {
				for _, n := range checkExpr(t, p.Title, tg.Expr, have) {
					used[n] = true
				}
			}
		}
		// Complete for on-call: rate, errors and latency by operation;
		// cache; dataloaders; store; replication; outbound; runtime.
		for _, n := range []string{
			"incidentlib_http_requests_total", "incidentlib_graphql_http_request_duration_seconds_count",
			"incidentlib_graphql_http_request_duration_seconds_bucket", "incidentlib_graphql_errors_total",
			"incidentlib_graphql_request_duration_seconds_bucket",
			"incidentlib_response_cache_requests_total", "incidentlib_response_cache_bytes", "incidentlib_response_cache_evictions_total",
			"incidentlib_apq_requests_total",
			"incidentlib_dataloader_batches_total", "incidentlib_dataloader_keys_total",
			"incidentlib_bbolt_write_commit_seconds_bucket", "incidentlib_bbolt_freelist_bytes", "incidentlib_bbolt_file_bytes",
			"incidentlib_follow_lag_seconds", "incidentlib_outbound_requests_total", "incidentlib_outbound_breaker_state",
			"incidentlib_outbound_conn_reused_total",
			"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes", "go_gc_duration_seconds",
		} {
			if !used[n] {
				t.Errorf("no panel shows %s", n)
			}
		}
	})

	t.Run("EveryIncidentlibFamilyShown", func(t *testing.T) {
		// Every family the server exports is on the dashboard or named
		// here as deliberately left off it.
		leftOff := map[string]bool{
			"incidentlib_bbolt_free_alloc_bytes": true, // the free pages panel shows the same in pages
		}
		var d map[string]any
		_ = json.Unmarshal(ops.Dashboard, &d)
		dash := string(ops.Dashboard)
		var missing []string
		for name := range have {
			if !strings.HasPrefix(name, "incidentlib_") || leftOff[name] || strings.HasSuffix(name, "_sum") {
				continue
			}
			base := strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count")
			if !strings.Contains(dash, base) {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("exported but on no panel: %v", missing)
		}
	})
}
