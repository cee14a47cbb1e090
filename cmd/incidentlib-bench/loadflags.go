package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// The flags of the benchmarks that measure with the load generator
// (loadgen.go), and their phases: warm-up, then interleaved measured
// rounds.

// loadFlags are the flags of a benchmark that drives the list page with
// the load generator.
type loadFlags struct {
	phases      phaseFlags
	concurrency int
	count       int
	seed        int64
	first       int
	gcPercent   int
	client      string
	takeTurns   bool
	prof        profiles
}

// phaseFlags are the flags of a benchmark measured in interleaved rounds
// of timed phases: -duration (default 5s) of a measured phase, -warmup
// (default 1s) driven unmeasured first, and -rounds (default 3), whose
// median is reported.
type phaseFlags struct {
	duration time.Duration
	warmup   time.Duration
	rounds   int
}

// declare defines -duration, -warmup and -rounds on fs with the
// benchmark's words for each.
func (p *phaseFlags) declare(fs *flag.FlagSet, durationUsage, warmupUsage, roundsUsage string) {
	fs.DurationVar(&p.duration, "duration", 5*time.Second, durationUsage)
	fs.DurationVar(&p.warmup, "warmup", time.Second, warmupUsage)
	fs.IntVar(&p.rounds, "rounds", 3, roundsUsage)
}

// check refuses values out of range.
func (p *phaseFlags) check() error {
	if p.duration <= 0 || p.warmup < 0 {
		return errors.New("-duration must be positive and -warmup not negative")
	}
	return atLeast("rounds", p.rounds, 1)
}

// atLeast refuses a whole-number flag below its least value, naming the
// flag and the value given.
func atLeast(flag string, v, least int) error {
	if v < least {
		return fmt.Errorf("-%s must be at least %d, got %d", flag, least, v)
	}
	return nil
}

// The load generator's clients (-client).
const (
	clientTransport = "transport"
	clientConn      = "conn"
)

// register defines the flags on fs; profiled names the measurement
// -cpuprofile and -memprofile profile.
func (f *loadFlags) register(fs *flag.FlagSet, profiled, client string) {
	f.phases.declare(fs, "how long each measurement drives one target (a duration such as 5s)", "how long each target is driven, unmeasured, before the first round", "interleaved rounds; the median is reported (at least 1)")
	fs.IntVar(&f.concurrency, "concurrency", 32, "concurrent keep-alive connections (at least 1)")
	fs.IntVar(&f.count, "count", 10_000, "generated incidents in the store (at least 100)")
	fs.Int64Var(&f.seed, "seed", 1, "generator seed")
	fs.IntVar(&f.first, "first", 20, "page size of the list page, 1 to 100")
	fs.IntVar(&f.gcPercent, "gc-percent", server.DefaultGCPercent, "garbage collector budget in percent of the live heap, as serve --gc-percent")
	fs.StringVar(&f.client, "client", client, clientTransport+": each worker sends through one net/http client (its connection pool, a reader and a writer goroutine per connection); "+
		clientConn+": each worker writes its requests to a connection of its own and reads the answers with http.ReadResponse, in its own goroutine (less of the load generator's CPU in every figure)")
	fs.BoolVar(&f.takeTurns, "take-turns", false, "the servers measured take turns as serve --take-turns does (server.TakeTurns); the static handlers never do")
	fs.StringVar(&f.prof.cpu, "cpuprofile", "", "write a CPU profile of "+profiled+" to this file")
	fs.StringVar(&f.prof.trace, "trace", "", "write an execution trace of "+profiled+" to this file (scheduler waits: go tool trace -pprof=sched FILE)")
	fs.StringVar(&f.prof.mem, "memprofile", "", "write allocation profiles before (FILE.base) and after "+profiled+": go tool pprof -diff_base FILE.base FILE")
}

// openGenerated sets the collector's budget to -gc-percent and opens a
// temporary store of -count incidents generated with -seed
// (tempGenerated); done closes and removes the store and restores the
// budget.
func (f *loadFlags) openGenerated(ctx context.Context, name string, stdout io.Writer) (db *storage.DB, incs []*incidentlib.Incident, done func(), err error) {
	old := debug.SetGCPercent(f.gcPercent)
	db, incs, closeStore, err := tempGenerated(ctx, name, f.count, f.seed, stdout)
	if err != nil {
		debug.SetGCPercent(old)
		return nil, nil, nil, err
	}
	return db, incs, func() { closeStore(); debug.SetGCPercent(old) }, nil
}

// check refuses values out of range.
func (f *loadFlags) check() error {
	if err := f.phases.check(); err != nil {
		return err
	}
	switch {
	case f.concurrency < 1:
		return fmt.Errorf("-concurrency must be at least 1, got %d", f.concurrency)
	case f.count < 100:
		return fmt.Errorf("-count must be at least 100, got %d", f.count)
	case f.first < 1 || f.first > incidentlib.MaxPageSize:
		return fmt.Errorf("-first must be 1 to %d, got %d", incidentlib.MaxPageSize, f.first)
	case f.client != clientTransport && f.client != clientConn:
		return fmt.Errorf("-client must be %s or %s, got %q", clientTransport, clientConn, f.client)
	case f.gcPercent < server.MinGCPercent || f.gcPercent > server.MaxGCPercent:
		return fmt.Errorf("-gc-percent must be %d to %d, got %d", server.MinGCPercent, server.MaxGCPercent, f.gcPercent)
	}
	return nil
}

// printSettings prints the machine's and the flags' settings of a
// measurement, as its first line, headed by the benchmark's name.
func (f *loadFlags) printSettings(w io.Writer, name string) {
	fmt.Fprintf(w, "%s: GOMAXPROCS=%d NumCPU=%d %s gc-percent=%d concurrency=%d client=%s take-turns=%v duration=%s rounds=%d\n",
		name, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(), f.gcPercent, f.concurrency, f.client, f.takeTurns, f.phases.duration, f.phases.rounds)
}

// warmUp drives each of targets, unmeasured, for -warmup.
func (f *loadFlags) warmUp(ctx context.Context, client *loadClient, targets []loadTarget) error {
	for _, t := range targets {
		if _, err := drive(ctx, client, f.concurrency, t, f.phases.warmup); err != nil {
			return fmt.Errorf("warm-up %s: %w", t.name, err)
		}
	}
	return nil
}

// measureRounds measures each of targets in turn for -duration, -rounds
// times (interleaved rounds), with the profiles of -cpuprofile, -trace
// and -memprofile on the first round's measurement of targets[profiled]
// (-1: none). After each measurement, each is called with the round (from
// 0), the target's index and the results so far, by target in round
// order (the new one is results[i][round]); its error ends the rounds.
func (f *loadFlags) measureRounds(ctx context.Context, client *loadClient, targets []loadTarget, profiled int, each func(round, i int, results [][]result) error) ([][]result, error) {
	results := make([][]result, len(targets))
	for round := range f.phases.rounds {
		for i, t := range targets {
			var prof *profiles
			if round == 0 && i == profiled {
				prof = &f.prof
			}
			r, err := measure(ctx, client, f.concurrency, t, f.phases.duration, prof)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, t.name, err)
			}
			results[i] = append(results[i], r)
			if err := each(round, i, results); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}
