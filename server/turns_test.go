package server_test

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/incidentlib/incidentlib/server"
)

// TestKeepAliveConnectionsTakeTurns sends 100 pipelined requests on each
// of three keep-alive connections, on one core, holds each connection's
// first request until all three are in the handler, and records the order
// in which the real handler serves the rest. Each connection always has
// its next request in hand. What is counted is how often a request is
// served right after one of its own connection, of 299 per round: about
// a third in a random order (100), with net/http alone 72 to 103 under the
// race detector (runs of up to 28) and 295 without it (one connection to
// the end, then the next), with TakeTurns 14 to 37 under the race
// detector and about 5 without (runs of at most 3). Three rounds; the
// test wants fewer than 150 repeats in all, half of chance.
func TestKeepAliveConnectionsTakeTurns(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	const conns, perConn, rounds = 3, 100, 3
	serve := func(t *testing.T, turns bool) (repeats, longestRun int, order string) {
		var mu sync.Mutex
		var seen []string // the remote address of each request served, in order
		names := map[string]byte{}
		arrived, gate := make(chan struct{}, conns), make(chan struct{})
		record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.RemoteAddr)
			_, old := names[r.RemoteAddr]
			if !old {
				names[r.RemoteAddr] = byte('a' + len(names))
			}
			mu.Unlock()
			if !old { // the connection's first request waits for the others' first
				arrived <- struct{}{}
				<-gate
			}
			ts.Srv.ServeHTTP(w, r)
		})
		hs := &http.Server{Handler: record}
		if turns {
			server.TakeTurns(hs)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = hs.Serve(ln) }()
		defer hs.Close()

		var cs []net.Conn
		for range conns {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cs = append(cs, c)
		}
		batch := strings.Repeat("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n", perConn)
		prev := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(prev)
		for _, c := range cs {
			if _, err := c.Write([]byte(batch)); err != nil {
				t.Fatal(err)
			}
		}
		for range conns {
			<-arrived
		}
		close(gate) // every connection has its next requests in its socket
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() {
				br := bufio.NewReader(c)
				for range perConn {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Errorf("status %d", resp.StatusCode)
					}
				}
			})
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != conns*perConn {
			t.Fatalf("served %d requests, want %d", len(seen), conns*perConn)
		}
		var b strings.Builder
		run := 0
		for i, a := range seen {
			if i > 0 && a == seen[i-1] {
				run++
				repeats++
			} else {
				run = 1
			}
			longestRun = max(longestRun, run)
			b.WriteByte(names[a])
		}
		return repeats, longestRun, b.String()
	}

	for _, turns := range []bool{false, true} {
		repeats, longest, worst := 0, 0, ""
		for range rounds {
			rep, run, order := serve(t, turns)
			repeats += rep
			if run > longest {
				longest, worst = run, order
			}
		}
		name := "TakeTurns"
		if !turns {
			name = "net/http alone" // the control: what TakeTurns is for
		}
		t.Logf("%s: %d of %d requests served right after one of their own connection; longest run %d: %s", name, repeats, rounds*(conns*perConn-1), longest, worst)
		if turns && repeats >= 150 {
			t.Errorf("with TakeTurns %d requests were served right after one of their own connection, want fewer than 150 (the connections taking turns)", repeats)
		}
	}
}
