package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
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
