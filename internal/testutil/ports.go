package testutil

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address, "127.0.0.1:PORT", whose port was
// free a moment ago: the kernel chose it for a listener that is closed
// again before FreeAddr returns, for a server under test to listen on.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
