package main

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeer refuses a connection whose peer, by the kernel's credentials
// of the socket (SO_PEERCRED), is another user than this process's.
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("the peer (pid %d) is the user %d, not this one (%d)", cred.Pid, cred.Uid, os.Getuid())
	}
	return nil
}
