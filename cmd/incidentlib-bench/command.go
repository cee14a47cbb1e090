package main

import (
	"context"
	"flag"
	"io"
)

// command is a benchmark as the harness runs it: its flags, declared on a
// flag set of its own (flagSet), their check once parsed, and the run.
type command interface {
	// declare defines the benchmark's flags on fs.
	declare(fs *flag.FlagSet)
	// check refuses parsed flag values out of range.
	check() error
	// run measures and prints the figures to stdout.
	run(ctx context.Context, stdout io.Writer) error
}

// registerCommand registers the benchmark newCommand makes afresh for
// each run. The preamble every benchmark shares (its flag set, the parse
// of args, the check) is this one.
func registerCommand(name, about string, newCommand func() command) {
	register(name, about, func(ctx context.Context, args []string, stdout io.Writer) error {
		c := newCommand()
		fs := flagSet(name, stdout)
		c.declare(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if err := c.check(); err != nil {
			return err
		}
		return c.run(ctx, stdout)
	})
}
