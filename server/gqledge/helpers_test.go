package gqledge_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// The edge's tests go through the whole handler (internal/testutil) over
// a real store in a temp dir.

// testServer is the real handler over a real store in a temp dir.
type testServer struct{ *testutil.Served }

// rawResponse is one HTTP exchange, bytes and all.
type rawResponse = testutil.Response

func newTestServer(tb testing.TB, incs []*incidentlib.Incident) *testServer {
	tb.Helper()
	return &testServer{testutil.ServeIncidents(tb, incs)}
}

// newEdgeServer is newTestServer with a configuration of the HTTP edge.
func newEdgeServer(tb testing.TB, incs []*incidentlib.Incident, cfg server.Config) *testServer {
	tb.Helper()
	return serveStore(tb, testutil.ServerStore(tb, incs, storage.Options{RecordCache: 1000}), cfg, testutil.ServerParts{})
}

// serveStore serves the whole handler over db, ready.
func serveStore(tb testing.TB, db *storage.DB, cfg server.Config, parts testutil.ServerParts) *testServer {
	tb.Helper()
	return &testServer{testutil.ServeStore(tb, db, cfg, parts)}
}

func seedIncidents(tb testing.TB) []*incidentlib.Incident { return testutil.SeedIncidents(tb) }

func corpus(tb testing.TB, n int, seed int64) []*incidentlib.Incident {
	return testutil.Corpus(tb, n, seed)
}

func (ts *testServer) do(tb testing.TB, req *http.Request) *rawResponse {
	tb.Helper()
	return testutil.Do(tb, ts.Server, req)
}

// post sends a GraphQL request body by POST; headers are name, value pairs.
func (ts *testServer) post(tb testing.TB, body map[string]any, headers ...string) *rawResponse {
	tb.Helper()
	return testutil.PostGraphQL(tb, ts.Server, body, headers...)
}

// get sends a GraphQL request by GET; params are the URL parameters.
func (ts *testServer) get(tb testing.TB, params url.Values, headers ...string) *rawResponse {
	tb.Helper()
	return testutil.GetGraphQL(tb, ts.Server, params, headers...)
}

// metric returns the value of one sample of /metrics, failing if it is
// not there.
func (ts *testServer) metric(tb testing.TB, sample string) float64 {
	tb.Helper()
	return testutil.Metric(tb, ts.Server, sample)
}

func (ts *testServer) outcome(tb testing.TB, o string) float64 {
	tb.Helper()
	return ts.metric(tb, `incidentlib_response_cache_requests_total{outcome="`+o+`"}`)
}

// readTx is the store's count of read transactions: a response served
// from the cache reads nothing.
func (ts *testServer) readTx() int { return ts.DB.Maintenance().StoreStats().ReadTxTotal }
