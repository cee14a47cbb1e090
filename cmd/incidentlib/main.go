// Command incidentlib serves, imports, exports, checks and compacts an
// incident library.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		var ec exitCode
		if errors.As(err, &ec) {
			os.Exit(int(ec))
		}
		fmt.Fprintln(os.Stderr, "incidentlib:", err)
		os.Exit(1)
	}
}

// exitCode ends the program with a code and nothing more to say.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

const usage = `usage: incidentlib COMMAND [flags]

commands:
  serve     serve the library over HTTP (GraphQL at /graphql, playground at /)
  import    import IL-JSON records (object, array or JSONL) into a store, all or nothing
  export    write every record as JSONL, sorted by id
  check     verify the store: bbolt, records, indexes, links, search index
  compact   rewrite the store with live data only (offline)
  reindex   rebuild the full-text search index of a store (offline)
  backup    copy the store of a running server (--server URL --token T > FILE)
  gen       write a deterministic synthetic corpus as JSONL
  linkcheck check every source link of a store and record status, time and final URL
  seeds     seeds update: bring an existing store's seed incidents to this binary's seed records
  token     add, list or revoke the API tokens of editors, reviewers and admins
  history   history compact --before DATE (drop old versions, explicit only); history import FILE (an export --history)
  cluster   cluster init: make an existing library the first snapshot of a cluster (docs/cluster.md)
  mcp       the library's MCP tools over stdio for an assistant, reading a running server (--server URL; docs/agents.md)

Run 'incidentlib COMMAND -h' for a command's flags. Every flag can also be
set with an environment variable INCIDENTLIB_<FLAG> (dashes as underscores).
`

// command is a subcommand: it reads its flags from args.
type command func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// commands are the subcommands by name, but import and mcp, the ones
// that read stdin.
var commands = map[string]command{
	"serve": runServe, "export": runExport, "check": runCheck, "compact": runCompact,
	"reindex": runReindex, "backup": runBackup, "gen": runGen, "linkcheck": runLinkcheck,
	"seeds":   runSeeds,
	"token":   runToken,
	"history": runHistory,
	"cluster": runCluster,
}

// run is the whole program; main only wires signals and the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(2)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "import":
		return runImport(ctx, rest, getenv, stdin, stdout, stderr)
	case "mcp":
		return runMCP(ctx, rest, getenv, stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	if c, ok := commands[cmd]; ok {
		return c(ctx, rest, getenv, stdout, stderr)
	}
	fmt.Fprintf(stderr, "incidentlib: unknown command %q\n\n%s", cmd, usage)
	return exitCode(2)
}
