package main

import (
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// The profiles a load generator measurement can be taken under.

// profiles writes a CPU profile (to cpu) and allocation profiles before
// (mem.base) and after (mem) one measurement; empty names write nothing.
type profiles struct {
	cpu, mem, trace    string
	cpuFile, traceFile *os.File
}

func (p *profiles) start() error {
	if p.mem != "" {
		if err := writeAllocs(p.mem + ".base"); err != nil {
			return err
		}
	}
	if p.trace != "" {
		f, err := os.Create(p.trace)
		if err != nil {
			return err
		}
		p.traceFile = f
		if err := trace.Start(f); err != nil {
			return err
		}
	}
	if p.cpu == "" {
		return nil
	}
	f, err := os.Create(p.cpu)
	if err != nil {
		return err
	}
	p.cpuFile = f
	return pprof.StartCPUProfile(f)
}

func (p *profiles) stop() error {
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			return err
		}
		p.cpuFile = nil
	}
	if p.traceFile != nil {
		trace.Stop()
		if err := p.traceFile.Close(); err != nil {
			return err
		}
		p.traceFile = nil
	}
	if p.mem != "" {
		return writeAllocs(p.mem)
	}
	return nil
}

func writeAllocs(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
