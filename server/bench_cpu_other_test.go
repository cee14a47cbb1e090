//go:build !unix

package server_test

func processCPU() int64 { return 0 }
