//go:build unix

package main

import (
	"os"
	"syscall"
)

// fileOwner returns the user id that owns the file.
func fileOwner(fi os.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}
