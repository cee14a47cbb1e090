package main

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// stampConn is a TCP connection whose reads keep the kernel's receive
// timestamp (SO_TIMESTAMPNS) of the last bytes read: when the answer
// reached the socket, before the reading goroutine had a core to read it
// on. The load generator shares the server's cores, so the time it waits
// for one is in the latency it measures at the reader; the latency to
// arrival leaves it out, as a client on its own core would (docs/performance.md,
// "GraphQL execution").
type stampConn struct {
	*net.TCPConn
	rc  syscall.RawConn
	oob []byte
	// last is when the last bytes read arrived, in Unix nanoseconds; 0
	// before any and when the kernel gave none. Atomic: with -client
	// transport the worker reads it while the connection's reader
	// goroutine may be reading (a conservative race: see drive).
	last atomic.Int64

	// one recvmsg, kept in fields so that Read allocates nothing
	p       []byte
	n, oobn int
	err     error
	recv    func(fd uintptr) bool
}

// keepStamping holds a socket with receive timestamps on for the life of
// the process: Linux stamps packets only while some socket asks for it,
// and when the first one does, it turns stamping on a moment later (a
// deferred work item), so a connection dialed while no other stamped
// socket is open could read its first answers without a timestamp.
var keepStamping = sync.OnceValue(func() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
		syscall.Close(fd)
		return err
	}
	time.Sleep(10 * time.Millisecond) // the deferred work item
	return nil                        // fd stays open
})

// stampArrivals turns on receive timestamps on c.
func stampArrivals(c net.Conn) (*stampConn, error) {
	if err := keepStamping(); err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, errors.New("receive timestamps need a TCP connection")
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	s := &stampConn{TCPConn: tc, rc: rc, oob: make([]byte, 2*syscall.CmsgSpace(int(unsafe.Sizeof(syscall.Timespec{}))))}
	s.recv = s.recvmsg
	return s, nil
}

func (s *stampConn) recvmsg(fd uintptr) bool {
	s.n, s.oobn, _, _, s.err = syscall.Recvmsg(int(fd), s.p, s.oob, 0)
	return s.err != syscall.EAGAIN // EAGAIN: wait for the socket (net's poller), then try again
}

// Read reads with recvmsg and keeps the timestamp the kernel gives with
// the bytes.
func (s *stampConn) Read(p []byte) (int, error) {
	s.p = p
	if err := s.rc.Read(s.recv); err != nil {
		return 0, err
	}
	s.p = nil
	if s.err != nil {
		return 0, s.err
	}
	if s.n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	var last int64
	oob := s.oob[:s.oobn]
	for len(oob) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if int(h.Len) < syscall.SizeofCmsghdr || int(h.Len) > len(oob) {
			break
		}
		data := oob[syscall.CmsgLen(0):h.Len]
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&data[0]))
			last = ts.Nano()
		}
		oob = oob[min(len(oob), syscall.CmsgSpace(int(h.Len)-syscall.CmsgLen(0))):]
	}
	s.last.Store(last)
	return s.n, nil
}

// arrived is when the last bytes read reached the socket; zero if unknown.
func (s *stampConn) arrived() time.Time {
	if ns := s.last.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
