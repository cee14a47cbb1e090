//go:build !unix

package main

// processCPU is not measured on this platform.
func processCPU() int64 { return 0 }
