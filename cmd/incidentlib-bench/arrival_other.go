//go:build !linux

package main

import (
	"errors"
	"net"
	"time"
)

// stampConn: receive timestamps are read on Linux only (arrival_linux.go);
// elsewhere the latency to arrival is not measured.
type stampConn struct{ net.Conn }

func stampArrivals(net.Conn) (*stampConn, error) {
	return nil, errors.ErrUnsupported
}

func (*stampConn) arrived() time.Time { return time.Time{} }
