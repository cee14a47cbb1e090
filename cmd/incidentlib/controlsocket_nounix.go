//go:build !unix

package main

import "os"

// fileOwner: files here have no Unix owner; the mode checks remain.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
