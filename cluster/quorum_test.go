package cluster

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// The quorum is one state: many goroutines flip it at once (exchanges
// with the stream's leader that succeed and fail close together), and
// afterwards the gauge incidentlib_cluster_quorum on /metrics, the stale
// mark of the responses and /readyz all say the state it was last set to,
// through the real handler. Run with -race.
func TestQuorumOneState(t *testing.T) {
	n := &Node{}
	n.quorum.init()
	mb := &Member{Node: n}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.watchQuorum(n)
	db := testutil.ServerStore(t, nil, storage.Options{})
	ts, _ := testutil.ServerTest(t, db, server.Config{Stale: mb.Stale}, testutil.ServerParts{Registry: reg})
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	for round := range 20 {
		final := round%2 == 0
		var wg sync.WaitGroup
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					n.quorum.set((g+i)%2 == 0)
				}
			}()
		}
		wg.Wait()
		n.quorum.set(final)

		want := "incidentlib_cluster_quorum 0"
		if final {
			want = "incidentlib_cluster_quorum 1"
		}
		if _, body := get("/metrics"); !strings.Contains(body, want+"\n") {
			t.Fatalf("round %d: the quorum is %v but /metrics does not say %q", round, final, want)
		}
		if mb.Stale() == final {
			t.Fatalf("round %d: the quorum is %v, Stale says %v", round, final, mb.Stale())
		}
		resp, body := get("/readyz")
		marked := resp.Header.Get(server.StaleHeader) == "true"
		if resp.StatusCode != http.StatusOK || marked == final || strings.Contains(body, "stale") == final {
			t.Fatalf("round %d: the quorum is %v; /readyz answered %d, %s %q, %q", round, final, resp.StatusCode, server.StaleHeader, resp.Header.Get(server.StaleHeader), body)
		}
	}
}
