//go:build !linux

package main

import "net"

// checkPeer accepts every connection where the system gives no peer
// credentials through the syscall package: the socket's mode (0600) and
// its directory's keep other users out.
func checkPeer(net.Conn) error { return nil }
