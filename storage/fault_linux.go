package storage

import (
	"os"
	"syscall"
)

// reserveRoom allocates n bytes at the end of the file at path
// (fallocate, which grows it): the room a write of the store needs to grow
// by one step. It returns the file system's error when there is no room
// (ENOSPC, or EFBIG past a file-size limit), and nil as well when the file
// system cannot allocate ahead: the write then tries.
func reserveRoom(path string, n int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	for {
		err = syscall.Fallocate(int(f.Fd()), 0, fi.Size(), n)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil && isFull(err) {
		return err
	}
	return nil
}
