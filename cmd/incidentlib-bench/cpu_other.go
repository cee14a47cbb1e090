//go:build !unix

package main

// processCPU is not measured on this platform.
func processCPU() int64 { return 0 }

// peakRSS is not measured on this platform.
func peakRSS() float64 { return 0 }
