package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib/cmd/internal/clusternode"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// The cluster benchmark's reads part: the graphql benchmark's list page
// and its ratio (the list page's rate over a static handler's that sends
// the same bytes), on a single node and on a cluster member holding the
// same incidents, in the same run, interleaved.

// nodeHandler composes a cluster member's HTTP handler as serve does on a
// cluster node: server.Assemble over the node's store with cfg.Stale on
// the member's quorum, behind the Idempotency-Key header's reader.
func nodeHandler(m *benchMember, cfg server.Config) (http.Handler, error) {
	met, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	cfg.Stale = m.mb.Stale
	node := clusternode.NewStore(m.store, m.mb.Writer)
	srv, _, err := server.Assemble(node.Reads, node.Writes, nil, nil, met, cfg)
	if err != nil {
		return nil, err
	}
	srv.SetReady(true)
	return clusternode.IdempotencyKeys(srv), nil
}

func (b *clusterBench) reads(ctx context.Context, c *benchCluster, dir string, out io.Writer) error {
	lf := &b.load
	defer debug.SetGCPercent(debug.SetGCPercent(lf.gcPercent))
	fmt.Fprintf(out, "reads: generating %d incidents (seed %d), imported into a single store and through the cluster\n", lf.count, lf.seed)
	single, incs, err := openGenerated(ctx, filepath.Join(dir, "reads-single.db"), lf.count, lf.seed)
	if err != nil {
		return err
	}
	defer single.Close()
	ids := make([]string, len(incs))
	for i, inc := range incs {
		ids[i] = inc.ID
	}
	// The same corpus again (the import may change the records it is
	// given), through the cluster.
	again, err := gen.Generate(gen.Options{Count: lf.count, Seed: lf.seed, Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		return err
	}
	if err := importThrough(ctx, c, again, len(again)); err != nil { // one import: links cross any chunking
		return err
	}
	node := c.members[1] // not the member the import went through
	if node.mb.Stale() {
		return fmt.Errorf("member %s has no quorum: its reads would be marked stale", node.name)
	}
	for _, db := range []*storage.DB{single, node.store} {
		if err := warmRecords(ctx, db, ids); err != nil {
			return err
		}
	}
	//nolint:ineffassign // dropped so that, from here on, the heap is the servers' own
	incs, again, ids = nil, nil, nil

	singleSrv, err := newServer(single, nil, executionConfig, nil)
	if err != nil {
		return err
	}
	singleSrv.SetReady(true)
	singleTimer := &handlerTimer{h: singleSrv}
	singleURL, stopSingle, err := listenTurns(singleTimer, lf.takeTurns)
	if err != nil {
		return err
	}
	defer stopSingle()
	nh, err := nodeHandler(node, executionConfig)
	if err != nil {
		return err
	}
	nodeTimer := &handlerTimer{h: nh}
	nodeURL, stopNode, err := listenTurns(nodeTimer, lf.takeTurns)
	if err != nil {
		return err
	}
	defer stopNode()

	client := newLoadClient(lf.concurrency, lf.client)
	defer client.close()
	listBody, _ := json.Marshal(map[string]any{"query": ListPageQuery, "variables": map[string]any{"first": lf.first}})
	listResp, listHeader, err := fetch(ctx, client.http, singleURL+"/graphql", listBody)
	if err != nil {
		return fmt.Errorf("list page: %w", err)
	}
	if bytes.Contains(listResp, []byte(`"errors"`)) || !bytes.HasPrefix(listResp, []byte(`{"data":`)) {
		return fmt.Errorf("list page: the response has errors: %.300s", listResp)
	}
	nodeResp, _, err := fetch(ctx, client.http, nodeURL+"/graphql", listBody)
	if err != nil {
		return fmt.Errorf("list page on the member: %w", err)
	}
	if !bytes.Equal(nodeResp, listResp) {
		return fmt.Errorf("the member's list page differs from the single node's:\n%.400s\n%.400s", nodeResp, listResp)
	}
	staticURL, stopStatic, err := listen(staticHandler(listResp, listHeader))
	if err != nil {
		return err
	}
	defer stopStatic()

	targets := []loadTarget{
		{name: "list page, single node", url: singleURL + "/graphql", body: listBody, want: listResp, timer: singleTimer},
		{name: "list page, cluster member " + node.name, url: nodeURL + "/graphql", body: listBody, want: listResp, timer: nodeTimer},
		{name: "static handler, same bytes", url: staticURL + "/graphql", body: listBody, want: listResp},
	}
	fmt.Fprintf(out, "reads: GOMAXPROCS=%d NumCPU=%d gc-percent=%d concurrency=%d client=%s take-turns=%v duration=%s rounds=%d; list page %d bytes sha256 %s\n",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), lf.gcPercent, lf.concurrency, lf.client, lf.takeTurns, lf.phases.duration, lf.phases.rounds, len(listResp), sha(listResp))
	runtime.GC()
	if err := lf.warmUp(ctx, client, targets); err != nil {
		return err
	}
	results, err := lf.measureRounds(ctx, client, targets, 1, func(round, i int, results [][]result) error {
		if n := results[i][round].errors; n > 0 {
			return fmt.Errorf("round %d, %s: %d requests failed or returned other bytes", round+1, targets[i].name, n)
		}
		if i == len(targets)-1 {
			// Each round's ratios, so that the noise between rounds shows.
			fmt.Fprintf(out, "  round %d: single %.0f req/s, member %.0f, static %.0f; ratio single %.3f, member %.3f\n", round+1,
				results[0][round].rps(), results[1][round].rps(), results[2][round].rps(),
				results[0][round].rps()/results[2][round].rps(), results[1][round].rps()/results[2][round].rps())
		}
		return nil
	})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "median of the rounds\treq/s\tp50\tp99\tarrival p99\tin handler p99\tCPU/req\tallocs/req\t")
	med := make([]result, len(targets))
	for i, t := range targets {
		med[i] = median(results[i])
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n", t.name, med[i].rps(), round3(med[i].p50), round3(med[i].p99),
			orDash(med[i].arrivalP99), orDash(med[i].inHandlerP99), round3(med[i].cpu), med[i].allocs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	single0, member0 := med[0].rps()/med[2].rps(), med[1].rps()/med[2].rps()
	fmt.Fprintf(out, "ratio list page / static handler: single node %.3f, cluster member %.3f (member / single %.3f); CPU per request member / single %.3f\n",
		single0, member0, member0/single0, float64(medianCPU(results[1]))/float64(max(medianCPU(results[0]), 1)))
	return nil
}
