package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Every benchmark takes its flags through its own flag set (flagSet, the
// preamble registerCommand holds): -h prints its usage to stdout and
// stops, and an unknown flag is refused before anything runs.
func TestEveryBenchmarkParsesItsFlags(t *testing.T) {
	names := make([]string, 0, len(benchmarks))
	for n := range benchmarks {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 10 {
		t.Fatalf("only %d benchmarks registered: %v", len(names), names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), []string{name, "-h"}, &out); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("-h: %v, want flag.ErrHelp", err)
			}
			if !strings.Contains(out.String(), "Usage of "+name) {
				t.Fatalf("-h printed %q to stdout, want the usage of %s", out.String(), name)
			}
			out.Reset()
			if err := run(context.Background(), []string{name, "-no-such-flag"}, &out); err == nil || !strings.Contains(err.Error(), "no-such-flag") {
				t.Fatalf("an unknown flag: %v", err)
			}
		})
	}
}

// Every benchmark measured in rounds of timed phases (phaseFlags: -duration,
// -warmup, -rounds) refuses the same nonsense with the same words before
// anything runs, whichever benchmark declares them.
func TestEveryPhasedBenchmarkChecksItsPhases(t *testing.T) {
	var phased []string
	for name := range benchmarks {
		var out bytes.Buffer
		_ = run(context.Background(), []string{name, "-h"}, &out)
		if u := out.String(); strings.Contains(u, "-duration") && strings.Contains(u, "-warmup") && strings.Contains(u, "-rounds") {
			phased = append(phased, name)
		}
	}
	sort.Strings(phased)
	for _, want := range []string{"cache", "graphql", "hostile"} {
		if !slices.Contains(phased, want) {
			t.Fatalf("%s takes no -duration, -warmup and -rounds: phased benchmarks %v", want, phased)
		}
	}
	for _, name := range phased {
		t.Run(name, func(t *testing.T) {
			for args, want := range map[string]string{
				"-rounds=0":    "-rounds must be at least 1",
				"-duration=0s": "-duration must be positive",
				"-warmup=-1s":  "-warmup not negative",
			} {
				var out bytes.Buffer
				if err := run(context.Background(), []string{name, args}, &out); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want %q", args, err, want)
				}
			}
		})
	}
}
