package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/storage"
)

// compareGlossary runs every class of queries (as searchTable does, in
// process) on x, which translates through the glossary, and on a second
// index of the same store without one, alternating the two -compare
// times (which goes first alternating too), and prints for each round the
// p99 and CPU per query of both and their ratios, then the median ratios,
// then the p99 of all rounds' latencies together and the mean CPU: the
// cost of the glossary, measured in one process on a busy machine.
func (b *searchBench) compareGlossary(ctx context.Context, db *storage.DB, x *search.Index, idxPath string, classes []queryClass, w io.Writer) error {
	os.RemoveAll(idxPath + ".plain")
	plain, err := search.Open(ctx, db.Incidents(), idxPath+".plain", search.Options{BatchSize: b.batch, StoreID: db.StoreID(),
		Concurrency: b.turns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer plain.Close()
	fmt.Fprintf(w, "\nglossary against none, alternating, %d rounds (ratio = with / without)\n", b.compare)
	const row = "%8s %8s %6s %12s %12s %7s %12s %12s %7s\n"
	fmt.Fprintf(w, row, "class", "filter", "round", "p99 without", "p99 with", "ratio", "CPU without", "CPU with", "ratio")
	for _, c := range classes {
		for _, filtered := range []bool{false, true} {
			f := "none"
			if filtered {
				f = "domain"
			}
			var p99s, cpus []float64
			var pooled [2][]time.Duration // every latency of every round
			var cpuSum [2]float64
			for round := range b.compare {
				var p99 [2]time.Duration
				var cpu [2]float64
				order := []int{0, 1}
				if round%2 == 1 {
					order = []int{1, 0}
				}
				for _, v := range order {
					idx := plain
					if v == 1 {
						idx = x
					}
					cpu0 := searchCPU()
					lat, _, err := b.measure(ctx, idx, c.queries, filtered)
					if err != nil {
						return fmt.Errorf("%s: %w", c.name, err)
					}
					cpu[v] = searchMs(searchCPU()-cpu0) / float64(len(lat))
					p99[v] = searchPct(lat, 99)
					pooled[v] = append(pooled[v], lat...)
					cpuSum[v] += cpu[v]
				}
				rp, rc := float64(p99[1])/float64(p99[0]), cpu[1]/cpu[0]
				p99s, cpus = append(p99s, rp), append(cpus, rc)
				fmt.Fprintf(w, row, c.name, f, fmt.Sprint(round+1), fmt.Sprintf("%.2f", searchMs(p99[0])), fmt.Sprintf("%.2f", searchMs(p99[1])),
					fmt.Sprintf("%.2f", rp), fmt.Sprintf("%.3f", cpu[0]), fmt.Sprintf("%.3f", cpu[1]), fmt.Sprintf("%.2f", rc))
			}
			fmt.Fprintf(w, row, c.name, f, "median", "", "", fmt.Sprintf("%.2f", medianF(p99s)), "", "", fmt.Sprintf("%.2f", medianF(cpus)))
			// The p99 of every round's latencies together, and the mean CPU.
			slices.Sort(pooled[0])
			slices.Sort(pooled[1])
			all0, all1 := searchPct(pooled[0], 99), searchPct(pooled[1], 99)
			fmt.Fprintf(w, row, c.name, f, "all", fmt.Sprintf("%.2f", searchMs(all0)), fmt.Sprintf("%.2f", searchMs(all1)), fmt.Sprintf("%.2f", float64(all1)/float64(all0)),
				fmt.Sprintf("%.3f", cpuSum[0]/float64(b.compare)), fmt.Sprintf("%.3f", cpuSum[1]/float64(b.compare)), fmt.Sprintf("%.2f", cpuSum[1]/cpuSum[0]))
		}
	}
	return nil
}
