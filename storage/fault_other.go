//go:build !linux

package storage

// reserveRoom: only Linux allocates ahead here; elsewhere the write tries.
func reserveRoom(path string, n int64) error { return nil }
