package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

type exportBench struct {
	cache int
}

func (b *exportBench) declare(fs *flag.FlagSet) {
	fs.IntVar(&b.cache, "record-cache", 10_000, "decoded records the store keeps, as serve --record-cache")
}

func (b *exportBench) check() error {
	if b.cache < 0 {
		return errors.New("-record-cache not negative")
	}
	return nil
}

func (b *exportBench) runIn(ctx context.Context, c *corpus, dir string, stdout io.Writer) error {
	tax := seeds.MustTaxonomy()
	fmt.Fprintf(stdout, "export: %d incidents, GOMAXPROCS %d, record cache %d, load average %s\n", c.incidents, runtime.GOMAXPROCS(0), b.cache, loadAvg())
	// The corpus is not kept: the collector takes it back (it is not the
	// server's memory).
	db, _, err := c.store(ctx, filepath.Join(dir, "export.db"), true, storage.Options{Taxonomy: tax, NoSync: true, RecordCache: b.cache}, stdout)
	if err != nil {
		return err
	}
	defer db.Close()

	// The response cache is off: every request streams from the store.
	url, stop, err := serveUncached(db, nil)
	if err != nil {
		return err
	}
	defer stop()
	// No client timeout: the whole export is one answer.
	client := &http.Client{Transport: benchTransport(1)}
	defer client.CloseIdleConnections()
	// A first export fills the store's record cache to its bound (its
	// memory is the store's, whatever reads it); the ones measured then
	// show what streaming adds.
	fmt.Fprintf(stdout, "%-40s %8s %9s %9s %13s %20s\n", "request", "lines", "MiB", "seconds", "incidents/s", "peak heap MiB (+)")
	for _, path := range []string{
		"/api/v1/incidents.csv (warm-up)",
		"/api/v1/incidents.csv",
		"/api/v1/incidents.csv?severities=sev1",
		"/api/v1/incidents.csv?dateTo=2014-12-31",
		"/feed.atom",
		"/api/v1/snapshot.jsonl.gz",
	} {
		name := path
		if i := strings.Index(path, " "); i > 0 {
			path = path[:i]
		}
		rows, size, took, peak, base, err := b.measure(ctx, client, url+path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprintf(stdout, "%-40s %8d %9.1f %9.2f %13.0f %10.1f (+%.1f)\n", name, rows, float64(size)/(1<<20), took.Seconds(),
			float64(rows)/took.Seconds(), float64(peak)/(1<<20), float64(int64(peak)-int64(base))/(1<<20))
	}
	fmt.Fprintf(stdout, "peak heap: the most heap objects held while the answer streamed (runtime/metrics, sampled every 2 ms), and above the heap before the request (after two collections); load average at the end %s\n", loadAvg())
	return nil
}

// measure GETs u, reading the body as a client would, and samples the
// heap while it streams: rows (lines, for CSV), bytes, time, the peak heap
// and the heap before.
func (b *exportBench) measure(ctx context.Context, client *http.Client, u string) (rows, size int64, took time.Duration, peak, base uint64, err error) {
	runtime.GC()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base = read()
	var maxHeap atomic.Uint64
	maxHeap.Store(base)
	stopSampling := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if h := read(); h > maxHeap.Load() {
					maxHeap.Store(h)
				}
			}
		}
	}()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := client.Do(req)
	if err != nil {
		close(stopSampling)
		wg.Wait()
		return 0, 0, 0, 0, 0, err
	}
	// size counts the bytes sent; rows the lines of the body, gunzipped
	// for the snapshot.
	var body io.Reader
	if resp.Header.Get("Content-Type") == "application/gzip" {
		if body, err = gzip.NewReader(&countingReader{r: resp.Body, n: &size}); err != nil {
			resp.Body.Close()
			close(stopSampling)
			wg.Wait()
			return 0, 0, 0, 0, 0, err
		}
	} else {
		body = &countingReader{r: resp.Body, n: &size}
	}
	br := bufio.NewReaderSize(body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			rows++
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			resp.Body.Close()
			close(stopSampling)
			wg.Wait()
			return 0, 0, 0, 0, 0, err
		}
	}
	resp.Body.Close()
	took = time.Since(start)
	close(stopSampling)
	wg.Wait()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, 0, 0, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return rows, size, took, maxHeap.Load(), base, nil
}

// countingReader counts the bytes read through it in *n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	*c.n += int64(k)
	return k, err
}
