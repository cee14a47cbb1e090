//go:build !race

package server_test

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/storage"
)

// reverseRelated is the brute-force reverse of related over every stored
// incident: for each id, the ids naming it, sorted.
func reverseRelated(t *testing.T, db *storage.DB) (map[string][]string, []string) {
	t.Helper()
	all, err := db.Incidents().AllIncidents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rev := map[string][]string{}
	ids := make([]string, 0, len(all))
	for _, inc := range all {
		ids = append(ids, inc.ID)
		for _, r := range inc.Related {
			if r != inc.ID && !slices.Contains(rev[r], inc.ID) {
				rev[r] = append(rev[r], inc.ID)
			}
		}
	}
	for _, l := range rev {
		slices.Sort(l)
	}
	return rev, ids
}

const relatedByPageQuery = `query($n: Int, $after: String) {
  incidents(first: $n, after: $after, orderBy: {field: ID, direction: ASC}) {
    nodes { id relatedBy { id } }
    pageInfo { hasNextPage endCursor } } }`

// TestRelatedByIsReverseOfRelated: relatedBy equals the brute-force
// reverse of related after random writes, merges and deletes, through
// FastReads and gqlgen alike, and on a replica that applied the change
// log.
func TestRelatedByIsReverseOfRelated(t *testing.T) {
	n, ops := 1500, 200
	if testing.Short() {
		n, ops = 500, 80
	}
	p := newFastPair(t, corpus(t, n, 23))
	db := p.db.DB
	scramble(t, db, ops, rand.New(rand.NewPCG(23, 1)))
	want, ids := reverseRelated(t, db)

	answered := executorCount(t, p.fast, "fast")
	pages := 0
	got := map[string][]string{}
	var after any
	for {
		var page struct {
			Incidents struct {
				Nodes []struct {
					ID        string
					RelatedBy []struct{ ID string }
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		// FastReads and gqlgen's executor answer the same bytes.
		raw := p.compare(t, relatedByPageQuery, map[string]any{"n": 100, "after": after}, "")
		pages++
		var resp struct {
			Data   json.RawMessage
			Errors []gqlError
		}
		status, body, _ := strings.Cut(string(raw), " ")
		if err := json.Unmarshal([]byte(body), &resp); err != nil || status != "200" || len(resp.Errors) > 0 {
			t.Fatalf("%s", raw)
		}
		if err := json.Unmarshal(resp.Data, &page); err != nil {
			t.Fatal(err)
		}
		for _, node := range page.Incidents.Nodes {
			for _, r := range node.RelatedBy {
				got[node.ID] = append(got[node.ID], r.ID)
			}
		}
		if !page.Incidents.PageInfo.HasNextPage {
			break
		}
		after = page.Incidents.PageInfo.EndCursor
	}
	for _, id := range ids {
		if !slices.Equal(got[id], want[id]) {
			t.Fatalf("relatedBy of %s is %v, the reverse of related is %v", id, got[id], want[id])
		}
	}
	if n := executorCount(t, p.fast, "fast") - answered; n != float64(pages) {
		t.Errorf("FastReads answered %v of %d pages", n, pages)
	}

	// A replica that applied the change log has the same reverse links.
	replica := testutil.OpenStore(t, storage.Options{})
	ctx := context.Background()
	var from uint64
	for {
		changes, err := db.Incidents().ChangesSince(ctx, from, 300)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) == 0 {
			break
		}
		if from, err = replica.Incidents().ApplyChanges(ctx, from, changes); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := replica.Incidents().RelatedByIDs(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if !slices.Equal(rev[i], want[id]) {
			t.Fatalf("replica: relatedBy of %s is %v, the reverse of related is %v", id, rev[i], want[id])
		}
	}
	for _, s := range []*storage.DB{db, replica} {
		if problems, err := s.Maintenance().Check(ctx); err != nil || len(problems) > 0 {
			t.Fatalf("check: %v %v", err, problems)
		}
	}
}

// loaderBatches reads the dataloader batch counters of a server.
func loaderBatches(t *testing.T, hs *httptest.Server) map[string]float64 {
	t.Helper()
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "incidentlib_dataloader_batches_total") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, _ := strconv.ParseFloat(line[i+1:], 64)
		out[line[:i]] = v
	}
	return out
}

// TestRelatedByNoNPlusOne: a list page asking relatedBy two levels deep
// costs the same read transactions and loader batches whatever its size,
// through FastReads and gqlgen's executor alike.
func TestRelatedByNoNPlusOne(t *testing.T) {
	incs := corpus(t, 2000, 24)
	// The first incident by id is named by one that is named in turn, so
	// that first: 1 reads every level too.
	incs[1].Related = append(incs[1].Related, incs[0].ID)
	incs[2].Related = append(incs[2].Related, incs[1].ID)
	p := newFastPair(t, incs)
	const q = `query($n: Int) { incidents(first: $n, orderBy: {field: ID, direction: ASC}) { nodes { id
	  relatedBy { id title organization { name } relatedBy { id } related { id } } } } }`
	for _, hs := range []*httptest.Server{p.fast, p.generic} {
		type cost struct {
			tx      int
			batches map[string]float64
		}
		costs := map[int]cost{}
		for _, size := range []int{100, 20, 1} {
			before, txBefore := loaderBatches(t, hs), readTxTotal(p.db.DB)
			raw := postRaw(t, hs.URL, q, map[string]any{"n": size}, "")
			if strings.Contains(string(raw), `"errors"`) {
				t.Fatal(string(raw))
			}
			c := cost{tx: readTxTotal(p.db.DB) - txBefore, batches: map[string]float64{}}
			for k, v := range loaderBatches(t, hs) {
				if d := v - before[k]; d != 0 {
					c.batches[k] = d
				}
			}
			costs[size] = c
			t.Logf("%s first: %d: %d read transactions, batches %v", hs.URL, size, c.tx, c.batches)
		}
		if costs[100].batches[`incidentlib_dataloader_batches_total{loader="relatedBy"}`] < 1 {
			t.Errorf("no relatedBy batch counted: %v", costs[100].batches)
		}
		for _, size := range []int{20, 1} {
			if costs[size].tx != costs[100].tx || !reflect.DeepEqual(costs[size].batches, costs[100].batches) {
				t.Errorf("first: %d cost %+v, first: 100 cost %+v", size, costs[size], costs[100])
			}
		}
	}
}
