// Command incidentlib-bench is the benchmark harness behind `make bench`.
// Each benchmark lives in its own file and registers itself by name; with
// no arguments every benchmark runs with its defaults, in name order.
//
//	go run ./cmd/incidentlib-bench [NAME [flags]]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
)

type benchmark struct {
	about string
	run   func(ctx context.Context, args []string, stdout io.Writer) error
}

var benchmarks = map[string]benchmark{}

// register adds a benchmark; called from init functions.
func register(name, about string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	if _, dup := benchmarks[name]; dup {
		panic("benchmark registered twice: " + name)
	}
	benchmarks[name] = benchmark{about, run}
}

// flagSet is a benchmark's flag set: a parse error is returned, not
// exited on, and the usage (-h) goes to stdout.
func flagSet(name string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	return fs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "incidentlib-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	names := make([]string, 0, len(benchmarks))
	for n := range benchmarks {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "help") {
		for _, n := range names {
			fmt.Fprintf(stdout, "%-12s %s\n", n, benchmarks[n].about)
		}
		return nil
	}
	if len(args) > 0 {
		b, ok := benchmarks[args[0]]
		if !ok {
			return fmt.Errorf("unknown benchmark %q (try -h)", args[0])
		}
		return b.run(ctx, args[1:], stdout)
	}
	for _, n := range names {
		fmt.Fprintf(stdout, "== %s: %s\n", n, benchmarks[n].about)
		if err := benchmarks[n].run(ctx, nil, stdout); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}
