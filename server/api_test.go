package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/changefeed"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/restapi"
	"github.com/incidentlib/incidentlib/storage"
)

// apiServer is the real handler over a real store (no fsync: these tests
// are about the API) with the given configuration.
func apiServer(tb testing.TB, cfg server.Config, incs []*incidentlib.Incident) *testServer {
	tb.Helper()
	return apiServerWith(tb, cfg, incs, testutil.ServerParts{})
}

// apiServerWith is apiServer made of parts.
func apiServerWith(tb testing.TB, cfg server.Config, incs []*incidentlib.Incident, parts testutil.ServerParts) *testServer {
	tb.Helper()
	db := testutil.ServerStore(tb, incs, storage.Options{RecordCache: 20000, NoSync: true, UpstreamLinks: true})
	return serveStore(tb, db, cfg, parts)
}

type apiAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (a apiAnswer) code(tb testing.TB) string {
	tb.Helper()
	var e struct {
		Error struct {
			Code  string   `json:"code"`
			Field []string `json:"field"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &e); err != nil {
		tb.Fatalf("error answer is not JSON (%d): %s", a.status, a.body)
	}
	return e.Error.Code
}

func (ts *testServer) apiGet(tb testing.TB, path string) apiAnswer {
	tb.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return apiAnswer{resp.StatusCode, resp.Header, b}
}

// feed reads one page of the change feed and parses every line.
func (ts *testServer) feed(tb testing.TB, query string) ([]incidentlib.Change, apiAnswer) {
	tb.Helper()
	a := ts.apiGet(tb, "/api/v1/changes?"+query)
	if a.status != http.StatusOK {
		tb.Fatalf("feed %s: %d %s", query, a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/x-ndjson" {
		tb.Fatalf("feed content type %q", ct)
	}
	var out []incidentlib.Change
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		cl, err := changefeed.ParseChangeLine(sc.Bytes())
		if err != nil {
			tb.Fatalf("feed line %q: %v", sc.Text(), err)
		}
		out = append(out, cl)
	}
	return out, a
}

func TestChangeFeed(t *testing.T) {
	incs := corpus(t, 60, 11)
	ts := apiServer(t, server.Config{}, incs)
	ctx := context.Background()

	all, a := ts.feed(t, "")
	if len(all) != restapi.DefaultFeedLimit && len(all) != 60 {
		t.Fatalf("default page: %d lines", len(all))
	}
	if a.header.Get(restapi.SeqHeader) != strconv.FormatUint(ts.DB.Incidents().Seq(), 10) {
		t.Fatalf("%s header %q, store at %d", restapi.SeqHeader, a.header.Get(restapi.SeqHeader), ts.DB.Incidents().Seq())
	}
	t.Run("RecordsAreTheStoredIL-JSON", func(t *testing.T) {
		var exp bytes.Buffer
		if err := ts.DB.Maintenance().Export(ctx, &exp); err != nil {
			t.Fatal(err)
		}
		stored := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(exp.String()), "\n") {
			var v struct{ ID string }
			_ = json.Unmarshal([]byte(line), &v)
			stored[v.ID] = line
		}
		var prev uint64
		for _, c := range all {
			if c.Seq <= prev || c.Deleted || c.Incident == nil {
				t.Fatalf("line %+v after seq %d", c, prev)
			}
			prev = c.Seq
			b, _ := json.Marshal(c.Incident)
			if string(b) != stored[c.ID] {
				t.Fatalf("feed record of %s differs from the stored one", c.ID)
			}
		}
	})
	t.Run("Pages", func(t *testing.T) {
		var got []incidentlib.Change
		since := uint64(0)
		for range 10 {
			page, _ := ts.feed(t, fmt.Sprintf("since=%d&limit=25", since))
			got = append(got, page...)
			if len(page) < 25 {
				break
			}
			since = page[len(page)-1].Seq
		}
		if len(got) != 60 || got[59].Seq != ts.DB.Incidents().Seq() {
			t.Fatalf("paged through %d changes, want 60 up to %d", len(got), ts.DB.Incidents().Seq())
		}
	})
	t.Run("Tombstone", func(t *testing.T) {
		seq := ts.DB.Incidents().Seq()
		res, err := ts.DB.Incidents().DeleteIncident(ctx, incs[5].ID, incidentlib.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		page, _ := ts.feed(t, fmt.Sprintf("since=%d", seq))
		if len(page) != 1+len(res.Unlinked) {
			t.Fatalf("%d changes after a delete that unlinked %d", len(page), len(res.Unlinked))
		}
		last := page[len(page)-1]
		if !last.Deleted || last.ID != incs[5].ID || last.Incident != nil {
			t.Fatalf("tombstone %+v", last)
		}
	})
	t.Run("ErrExtraFieldsNamedAsTheFeedsOwn", func(t *testing.T) {
		// A feed line begins with seq, deleted (and entry on the history
		// feed) before the record's own members: a record member of one
		// of those names would be a second one in the line, and a client
		// that takes the last would see a forged sequence or tombstone.
		for _, name := range []string{"seq", "deleted", "entry"} {
			inc := *incs[6]
			inc.ID = "IL-0900"
			inc.Related, inc.RecurrenceOf = nil, ""
			inc.Extra = incidentlib.Extra{name: json.RawMessage(`"a field of the record"`)}
			seq := ts.DB.Incidents().Seq()
			_, err := ts.DB.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{&inc}, incidentlib.ImportOptions{KeepUpdatedAt: true})
			if incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("%s: %v, want INVALID", name, err)
			}
			if ts.DB.Incidents().Seq() != seq {
				t.Fatalf("%s: the refused import wrote", name)
			}
		}
	})
	bad := func(name, query string, status int, code string) {
		t.Run(name, func(t *testing.T) {
			a := ts.apiGet(t, "/api/v1/changes?"+query)
			if a.status != status || a.code(t) != code {
				t.Fatalf("%s: %d %s, want %d %s", query, a.status, a.body, status, code)
			}
		})
	}
	bad("ErrSinceNegative", "since=-1", 400, incidentlib.EINVALID)
	bad("ErrSinceNotANumber", "since=abc", 400, incidentlib.EINVALID)
	bad("ErrLimitZero", "limit=0", 400, incidentlib.EINVALID)
	bad("ErrLimitAboveMax", "limit=1001", 400, incidentlib.EINVALID)
	bad("ErrLimitNotANumber", "limit=ten", 400, incidentlib.EINVALID)
	bad("ErrWaitWithoutUnit", "wait=5", 400, incidentlib.EINVALID)
	bad("ErrWaitTooLong", "wait=61s", 400, incidentlib.EINVALID)
	bad("ErrWaitNegative", "wait=-1s", 400, incidentlib.EINVALID)
	bad("ErrSinceAboveTheStore", fmt.Sprintf("since=%d", ts.DB.Incidents().Seq()+1), 409, incidentlib.ECONFLICT)
}

func TestChangeFeedLongPoll(t *testing.T) {
	ts := apiServer(t, server.Config{}, corpus(t, 3, 12))
	ctx := context.Background()
	t.Run("WakesOnCommit", func(t *testing.T) {
		// The headers come at once; the change written afterwards is in
		// the body: the held request woke up on the commit.
		seq := ts.DB.Incidents().Seq()
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, fmt.Sprintf("%s/api/v1/changes?since=%d&wait=10s", ts.URL, seq), nil)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		inc := corpus(t, 4, 12)[3]
		inc.Related, inc.RecurrenceOf = nil, ""
		if _, err := ts.DB.Incidents().ImportIncidents(ctx, []*incidentlib.Incident{inc}, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := changefeed.ParseChangeLine(body)
		if err != nil || cl.ID != inc.ID || cl.Seq != seq+1 {
			t.Fatalf("long poll answered %q (%v), want the change of %s", body, err, inc.ID)
		}
	})
	t.Run("AnswersAtOnceWhenBehind", func(t *testing.T) {
		page, _ := ts.feed(t, "since=0&wait=60s")
		if len(page) == 0 {
			t.Fatal("a poll with changes waiting was held")
		}
	})
	t.Run("StopLongPollsEndsHeldRequests", func(t *testing.T) {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, fmt.Sprintf("%s/api/v1/changes?since=%d&wait=60s", ts.URL, ts.DB.Incidents().Seq()), nil)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		ts.Srv.StopLongPolls()
		body, err := io.ReadAll(resp.Body)
		if err != nil || len(body) != 0 {
			t.Fatalf("a stopped long poll answered %q, %v (want an empty page before the client's deadline)", body, err)
		}
	})
}

func TestIncidentsAPI(t *testing.T) {
	incs := corpus(t, 10, 13)
	ts := apiServer(t, server.Config{}, incs)
	var exp bytes.Buffer
	if err := ts.DB.Maintenance().Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(exp.String()), "\n")

	t.Run("One", func(t *testing.T) {
		a := ts.apiGet(t, "/api/v1/incidents/"+incs[0].ID)
		if a.status != 200 || strings.TrimSpace(string(a.body)) != lines[0] || a.header.Get("Content-Type") != "application/json" {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("Many", func(t *testing.T) {
		a := ts.apiGet(t, "/api/v1/incidents?ids="+strings.Join([]string{incs[2].ID, "IL-9999", incs[1].ID, incs[2].ID}, ","))
		if a.status != 200 {
			t.Fatalf("%d %s", a.status, a.body)
		}
		want := "[" + lines[2] + "," + lines[1] + "]"
		if strings.TrimSpace(string(a.body)) != want {
			t.Fatalf("got %s", a.body)
		}
		recs, err := importer.ReadRecords("answer", a.body)
		if err != nil || len(recs) != 2 {
			t.Fatalf("the answer does not read as IL-JSON: %v", err)
		}
	})
	t.Run("NoneFound", func(t *testing.T) {
		a := ts.apiGet(t, "/api/v1/incidents?ids=IL-9999")
		if a.status != 200 || strings.TrimSpace(string(a.body)) != "[]" {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	many := make([]string, restapi.MaxIDsPerRequest+1)
	for i := range many {
		many[i] = incidentlib.FormatID(uint32(i + 1))
	}
	for _, c := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"ErrNotFound", "/api/v1/incidents/IL-9999", 404, incidentlib.ENOTFOUND},
		{"ErrMalformedID", "/api/v1/incidents/IL-1", 400, incidentlib.EINVALID},
		{"ErrNoIDs", "/api/v1/incidents", 400, incidentlib.EINVALID},
		{"ErrMalformedIDInList", "/api/v1/incidents?ids=IL-0001,nope", 400, incidentlib.EINVALID},
		{"ErrTooManyIDs", "/api/v1/incidents?ids=" + strings.Join(many, ","), 400, incidentlib.EINVALID},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := ts.apiGet(t, c.path)
			if a.status != c.status || a.code(t) != c.code {
				t.Fatalf("%d %s, want %d %s", a.status, a.body, c.status, c.code)
			}
		})
	}
}
