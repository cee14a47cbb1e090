package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// scrape returns the text of hs's /metrics.
func scrape(tb testing.TB, hs *httptest.Server) string {
	tb.Helper()
	resp, err := hs.Client().Get(hs.URL + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		tb.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// TestDocumentedMetricsExported: every metric docs/operations.md names is
// exported by the real handler over a real store with search, once a query,
// a loader's batch and an error have been served; the names the cluster,
// the replica and the upstream library register (their own packages) are
// left to their tests.
func TestDocumentedMetricsExported(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{"incidentlib_dataloader_keys_total": true} // the doc writes `_keys_total{loader}`
	for _, n := range regexp.MustCompile(`incidentlib_[a-z_]+[a-z]`).FindAllString(string(doc), -1) {
		switch {
		case strings.HasPrefix(n, "incidentlib_cluster_"), strings.HasPrefix(n, "incidentlib_follow_"), strings.HasPrefix(n, "incidentlib_upstream_"):
		default:
			names[n] = true
		}
	}
	if len(names) < 20 {
		t.Fatalf("only %d metric names found in docs/operations.md", len(names))
	}
	db := testutil.ServerStore(t, testutil.Corpus(t, 20, 7), storage.Options{})
	idx, err := search.Open(context.Background(), db.Incidents(), filepath.Join(t.TempDir(), "search"), search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	hs, _ := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{Search: idx})
	for _, q := range []string{
		`query ListPage { incidents(first: 3) { nodes { id organization { name } related { id } } } }`,
		`query Broken { incidents(after: "!!") { totalCount } }`,
		`query Search { search(query: "database") { totalCount } }`,
	} {
		testutil.PostGraphQL(t, hs, map[string]any{"query": q})
	}
	text := scrape(t, hs)
	for n := range names {
		if !strings.Contains(text, "\n# TYPE "+n+" ") {
			t.Errorf("docs/operations.md names %s; /metrics does not export it", n)
		}
	}
}

// TestStoreFiguresAtScrape: the store's figures are read when /metrics is
// scraped (a write shows at the next scrape) and a scrape starts no read
// transaction, so that it never waits on the store.
func TestStoreFiguresAtScrape(t *testing.T) {
	db := testutil.ServerStore(t, testutil.Corpus(t, 3, 5), storage.Options{})
	hs, _ := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{})
	sample := func(name string) string {
		t.Helper()
		for _, line := range strings.Split(scrape(t, hs), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				return v
			}
		}
		t.Fatalf("no %s in /metrics", name)
		return ""
	}
	seq := sample("incidentlib_store_sequence")
	if want := db.Incidents().Seq(); seq != formatUint(want) {
		t.Fatalf("incidentlib_store_sequence %s, the store's %d", seq, want)
	}
	inc := testutil.Corpus(t, 4, 5)[3]
	if _, err := db.Incidents().ImportIncidents(context.Background(), []*incidentlib.Incident{inc}, incidentlib.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := sample("incidentlib_store_sequence"); got != formatUint(db.Incidents().Seq()) || got == seq {
		t.Fatalf("after a write incidentlib_store_sequence is %s (was %s), the store's %d", got, seq, db.Incidents().Seq())
	}
	before := sample("incidentlib_bbolt_read_tx_total")
	if after := sample("incidentlib_bbolt_read_tx_total"); after != before {
		t.Fatalf("a scrape started read transactions: %s, then %s", before, after)
	}
}

func formatUint(n uint64) string { return strconv.FormatUint(n, 10) }

// queueFigures is a search queue that says fixed figures.
type queueFigures struct{}

func (queueFigures) Waiting() int         { return 7 }
func (queueFigures) SaveFailures() uint64 { return 3 }

// TestSearchQueueAtScrape: the search figures are read from the queue the
// server is given by name (Config.SearchQueue), at scrape time.
func TestSearchQueueAtScrape(t *testing.T) {
	db := testutil.ServerStore(t, testutil.Corpus(t, 3, 5), storage.Options{})
	hs, _ := testutil.ServerTest(t, db, server.Config{SearchQueue: queueFigures{}}, testutil.ServerParts{})
	text := scrape(t, hs)
	for _, want := range []string{"incidentlib_search_waiting 7\n", "incidentlib_search_index_save_failures_total 3\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
}
