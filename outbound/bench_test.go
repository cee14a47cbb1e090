package outbound

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkKeepAlive compares GETs at concurrency 32 against a loopback
// server with the pooled keep-alive client and with DisableKeepAlives (a new
// TCP connection per request, the bug of the BFF postmortem). Run with a
// bounded -benchtime, e.g. -benchtime=5000x: without keep-alive every
// request leaves a socket in TIME_WAIT.
func BenchmarkKeepAlive(b *testing.B) {
	const concurrency = 32
	payload := []byte(`{"id":"pm-1","title":"BFF opened a TCP connection per backend call"}`)
	for _, bc := range []struct {
		name    string
		disable bool
	}{{"keepalive", false}, {"no-keepalive", true}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := newTestServer(b, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(payload)
			})
			defer srv.Close()
			cfg := DefaultConfig()
			cfg.DisableKeepAlives = bc.disable
			c, err := New(cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()

			var next, failed atomic.Int64
			var wg sync.WaitGroup
			n := int64(b.N)
			b.ResetTimer()
			start := time.Now()
			for range concurrency {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= n {
						req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
						resp, err := c.Do(req)
						if err != nil {
							failed.Add(1)
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if f := failed.Load(); f > 0 {
				b.Fatalf("%d of %d requests failed", f, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(srv.accepted.Load()), "tcp_conns")
		})
	}
}
