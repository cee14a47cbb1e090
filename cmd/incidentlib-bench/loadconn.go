package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"
)

// The harness's HTTP clients: a pooled client for one host, and a
// connection of its own for a worker of the load generator (-client conn).

// newBenchClient is a client of conns keep-alive connections to one
// host, without compression.
func newBenchClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: benchTransport(conns)}
}

// benchTransport is the transport of the harness's clients: conns
// keep-alive connections a host, without compression.
func benchTransport(conns int) *http.Transport {
	return &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: time.Minute, DisableCompression: true,
	}
}

// connSender sends one target's request over one keep-alive connection,
// one request after the other, in the caller's goroutine.
type connSender struct {
	conn   net.Conn
	stamps *stampConn // conn with receive timestamps; nil where they are not read
	br     *bufio.Reader
	reqs   [][]byte // the whole requests, headers and body, sent in turn
	next   int      // the index in reqs of the next request
}

func dialTarget(ctx context.Context, t loadTarget) (*connSender, error) {
	u, err := url.Parse(t.url)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	method := t.method
	if method == "" {
		method = http.MethodPost
	}
	s := &connSender{conn: conn}
	for _, body := range t.bodyList() {
		req := fmt.Appendf(nil, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), u.Host)
		if body != nil {
			req = fmt.Appendf(req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
		}
		s.reqs = append(s.reqs, append(append(req, "\r\n"...), body...))
	}
	s.next = rand.IntN(len(s.reqs)) // workers start at different bodies
	if sc, err := stampArrivals(conn); err == nil {
		s.conn, s.stamps = sc, sc
	}
	s.br = bufio.NewReaderSize(s.conn, 16<<10)
	return s, nil
}

// send sends the request once and returns the body of a 200 response,
// read into buf. After an error the connection is not usable.
func (s *connSender) send(buf []byte) ([]byte, error) {
	req := s.reqs[s.next]
	s.next = (s.next + 1) % len(s.reqs)
	if _, err := s.conn.Write(req); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return nil, err
	}
	if resp.Close { // the next request would find the connection gone
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: the server closed the connection", resp.StatusCode)
	}
	return readOK(resp, buf)
}
