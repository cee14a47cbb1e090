package server

import (
	"net"
	"net/http"
	"runtime"
)

// TakeTurns makes the keep-alive connections hs serves take turns: after
// each response, a connection's goroutine yields its core
// (runtime.Gosched) before it reads the connection's next request. It sets
// hs.ConnState, calling any hook already set first, and returns hs.
//
// net/http serves a connection in one goroutine that reads a request,
// answers it and reads the next. When the next request is already in the
// socket (a client that answers fast, a pipelining client, or any client
// of a server behind its load), that goroutine goes on without blocking,
// and Go's scheduler lets it run until it blocks or is preempted after
// 10 ms, while the goroutines of the other connections, readied by the
// network poller, wait. Under saturation some connections are served
// several times in a row and the others wait: with wrk at 32 connections
// on the list page, p99 was 4 to 5 times the mean. A yielded goroutine
// goes to the back of the global run queue, behind the connections
// already waiting, so each connection with a request in hand is served
// once per turn (docs/design.md, "Keep-alive connections take turns"). The price
// is a trip through the scheduler per request (about 7 µs of CPU here)
// and, with clients that always have their next request in, up to 13% of
// the rate: serving a connection again at once is the cheapest order, not
// a fair one. It pays for expensive answers only: for cheap ones (a
// response cache hit, about 20 µs) the p99 was about twice net/http's
// order's, so serve sets it only with --take-turns.
// TestKeepAliveConnectionsTakeTurns pins the order.
func TakeTurns(hs *http.Server) *http.Server {
	prev := hs.ConnState
	hs.ConnState = func(c net.Conn, s http.ConnState) {
		if prev != nil {
			prev(c, s)
		}
		if s == http.StateIdle { // a response is done; the next request is read after this
			runtime.Gosched()
		}
	}
	return hs
}
