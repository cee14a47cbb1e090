package restapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/restapi"
	"github.com/incidentlib/incidentlib/storage"
)

// countingTaxonomyLog forwards the taxonomy's history of the real store
// and counts the reads.
type countingTaxonomyLog struct {
	tl incidentlib.TaxonomyLog
	n  atomic.Int64
}

func (c *countingTaxonomyLog) TaxonomyChangesAfter(ctx context.Context, after uint64, limit int) ([]*incidentlib.TaxonomyChange, error) {
	c.n.Add(1)
	return c.tl.TaxonomyChangesAfter(ctx, after, limit)
}

// countingHistory forwards the change log's history of the real store and
// counts the reads.
type countingHistory struct {
	h incidentlib.HistoryLog
	n atomic.Int64
}

func (c *countingHistory) VersionsSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	c.n.Add(1)
	return c.h.VersionsSince(ctx, seq, limit)
}

// The REST API's optional feeds are named dependencies (restapi.Deps):
// given, they are what the endpoints read; not given, the endpoint is not
// there (the taxonomy's feed) or serves current records (the change
// feed), even when the change log it has could answer them itself (the
// store's reads are a TaxonomyLog and a HistoryLog): nothing is found by
// type assertion. And the whole server (server.Assemble) names both.
func TestDepsNameTheFeeds(t *testing.T) {
	db := testutil.OpenSeeded(t, storage.Options{NoSync: true})
	reads := db.Reads()
	asAdmin := func(r *http.Request) (*http.Request, error) {
		return r.WithContext(incidentlib.WithIdentity(r.Context(), incidentlib.BootstrapAdmin)), nil
	}
	get := func(t *testing.T, url string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	mount := func(t *testing.T, d restapi.Deps) string {
		mux := http.NewServeMux()
		d.Changes, d.Incidents, d.Authenticate = reads, reads, asAdmin
		d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		restapi.Mount(mux, d)
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		return hs.URL
	}

	t.Run("Given", func(t *testing.T) {
		tl, h := &countingTaxonomyLog{tl: reads}, &countingHistory{h: reads}
		base := mount(t, restapi.Deps{TaxonomyLog: tl, History: h})
		if resp := get(t, base+"/api/v1/taxonomy/changes"); resp.StatusCode != http.StatusOK || tl.n.Load() != 1 {
			t.Fatalf("taxonomy feed: status %d, %d reads of the TaxonomyLog given", resp.StatusCode, tl.n.Load())
		}
		if resp := get(t, base+"/api/v1/changes?since=0"); resp.StatusCode != http.StatusOK ||
			resp.Header.Get(restapi.FeedHeader) != "history" || h.n.Load() != 1 {
			t.Fatalf("change feed: status %d, feed %q, %d reads of the HistoryLog given", resp.StatusCode, resp.Header.Get(restapi.FeedHeader), h.n.Load())
		}
	})
	t.Run("NotGiven", func(t *testing.T) {
		base := mount(t, restapi.Deps{})
		if resp := get(t, base+"/api/v1/taxonomy/changes"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("taxonomy feed without a TaxonomyLog: status %d, want 404", resp.StatusCode)
		}
		if resp := get(t, base+"/api/v1/changes?since=0"); resp.StatusCode != http.StatusOK || resp.Header.Get(restapi.FeedHeader) != "" {
			t.Fatalf("change feed without a HistoryLog: status %d, feed %q", resp.StatusCode, resp.Header.Get(restapi.FeedHeader))
		}
	})
	t.Run("Assembled", func(t *testing.T) {
		hs, _ := testutil.ServerTest(t, db, server.Config{AdminToken: "test-admin-token-0123456789abcdef"}, testutil.ServerParts{})
		if resp := get(t, hs.URL+"/api/v1/taxonomy/changes"); resp.StatusCode != http.StatusOK {
			t.Fatalf("the server's taxonomy feed: status %d", resp.StatusCode)
		}
		if resp := get(t, hs.URL+"/api/v1/changes?since=0", "Authorization", "Bearer test-admin-token-0123456789abcdef"); resp.StatusCode != http.StatusOK ||
			resp.Header.Get(restapi.FeedHeader) != "history" {
			t.Fatalf("the server's change feed to an admin: status %d, feed %q", resp.StatusCode, resp.Header.Get(restapi.FeedHeader))
		}
	})
}
