//go:build long

package server_test

// longRun: the long runs of `make test-long` (-tags long).
func longRun() bool { return true }
