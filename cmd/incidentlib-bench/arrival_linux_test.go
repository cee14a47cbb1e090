package main

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// TestStampConnArrival: a loopback peer answers 20 ms after the request
// and the reader reads 200 ms after that; the arrival stamp is the first
// moment, not the second, and the bytes are read whole.
func TestStampConnArrival(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := c.Read(make([]byte, 64)); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
		_, _ = c.Write([]byte(answer))
		_, _ = c.Read(make([]byte, 1)) // until the client closes
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := stampArrivals(c)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if !sc.arrived().IsZero() {
		t.Fatal("an arrival before any read")
	}
	t0 := time.Now()
	if _, err := sc.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(220 * time.Millisecond)
	got := make([]byte, len(answer))
	if _, err := io.ReadFull(bufio.NewReader(sc), got); err != nil {
		t.Fatal(err)
	}
	read := time.Now()
	if string(got) != answer {
		t.Fatalf("read %q, want %q", got, answer)
	}
	arrived := sc.arrived()
	if arrived.IsZero() {
		t.Fatal("no receive timestamp")
	}
	if d := arrived.Sub(t0); d < 20*time.Millisecond || d > read.Sub(t0)-100*time.Millisecond {
		t.Errorf("arrival %v after the request and the read %v after it: want the answer's arrival, 20ms on, well before the read", d, read.Sub(t0))
	}
}
