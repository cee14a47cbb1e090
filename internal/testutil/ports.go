package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address, "127.0.0.1:PORT", whose port was
// free a moment ago, for a server under test to listen on.
//
// The port is drawn below the kernel's ephemeral range (Linux's
// ip_local_port_range) where that leaves room: a port the kernel chose for
// a listener (":0") is one it also hands to outgoing connections, so
// between FreeAddr and the server's own listen another connection of the
// test (a route between cluster members, a client) could take it. Ports
// drawn here are not handed out by the kernel, and a process never gets
// the same one twice.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	lo, hi := quietPorts()
	for range 200 {
		if lo == 0 {
			break
		}
		port := lo + rand.IntN(hi-lo)
		if !claimPort(port) {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use by something else
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var (
	portsMu sync.Mutex
	claimed = map[int]bool{}
)

// claimPort reports whether port was not handed out before in this
// process, and marks it handed out.
func claimPort(port int) bool {
	portsMu.Lock()
	defer portsMu.Unlock()
	if claimed[port] {
		return false
	}
	claimed[port] = true
	return true
}

// quietPorts is the range [lo, hi) of ports below the kernel's ephemeral
// range that FreeAddr draws from; lo is 0 when there is none to use.
func quietPorts() (lo, hi int) {
	const floor = 10000 // above the ports services are commonly given
	low := 32768        // Linux's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var a, z int
		if _, err := fmt.Sscan(string(b), &a, &z); err == nil {
			low = a
		}
	}
	if low-floor < 1000 {
		return 0, 0
	}
	return floor, low
}
