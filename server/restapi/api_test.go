package restapi_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/changefeed"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// No change of a feed page is above the page's Incidentlib-Seq: a long
// poll, whose header goes out before the wait, carries the sequence of the
// page it answers with as a trailer.
func TestFeedSeqBoundsItsPage(t *testing.T) {
	db := testutil.OpenStore(t, storage.Options{NoSync: true})
	ctx := context.Background()
	upsert := func(id, title string) {
		t.Helper()
		inc := &incidentlib.Incident{ID: id, Org: "Acme", OrgSlug: "acme", Title: incidentlib.Text{En: title}}
		if _, err := db.Incidents().UpsertIncident(ctx, inc, incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	upsert("IL-0001", "one")
	hs, _ := testutil.ServerTest(t, db, server.Config{}, testutil.ServerParts{})
	before := db.Incidents().Seq()

	// A long poll's headers go out at once: the poll is held when Get
	// returns.
	resp, err := http.Get(hs.URL + "/api/v1/changes?since=" + strconv.FormatUint(before, 10) + "&wait=30s")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	upsert("IL-0002", "two")
	var a struct {
		header, trailer string
		seqs            []uint64
	}
	a.header = resp.Header.Get("Incidentlib-Seq")
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		c, err := changefeed.ParseChangeLine(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		a.seqs = append(a.seqs, c.Seq)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	a.trailer = resp.Trailer.Get("Incidentlib-Seq")
	if a.header != strconv.FormatUint(before, 10) {
		t.Fatalf("header %q, want the sequence %d when the poll came in", a.header, before)
	}
	head, err := strconv.ParseUint(a.trailer, 10, 64)
	if err != nil || len(a.seqs) == 0 {
		t.Fatalf("trailer %q, changes %v", a.trailer, a.seqs)
	}
	for _, s := range a.seqs {
		if s > head {
			t.Fatalf("change %d above the page's trailer %d", s, head)
		}
	}
}
