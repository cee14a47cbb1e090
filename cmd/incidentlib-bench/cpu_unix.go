//go:build unix

package main

import "syscall"

// processCPU returns the CPU time the process has used, user and system,
// in nanoseconds; 0 if it cannot be read.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// peakRSS returns the process's peak resident set in MiB (rusage Maxrss,
// the kernel's VmHWM; the store's mapped pages count); 0 if unknown.
func peakRSS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}
