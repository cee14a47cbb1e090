package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// history compact --before DATE: remove the versions written before DATE
// but each incident's latest (explicit only: compact never drops
// history). history import FILE: write a history export (export
// --history) into a store that holds none of its ids, every version as
// given.
func runHistory(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("history: say compact or import (incidentlib history compact --db PATH --before 2026-01-01)")
	}
	sub, args := args[0], args[1:]
	f := newFlags("history "+sub, getenv, stderr)
	sf := addStoreFlags(f)
	// The program's own writes are by the administrator at the console.
	ctx = incidentlib.WithIdentity(ctx, incidentlib.BootstrapAdmin)
	switch sub {
	case "compact":
		before := f.str("before", "", "remove the versions written before this date (YYYY-MM-DD, UTC midnight, or RFC 3339); each incident's latest version stays (required)")
		if err := f.parse(args); err != nil {
			return err
		}
		t, err := parseBefore(*before)
		if err != nil {
			return fmt.Errorf("--before: %w", err)
		}
		return sf.with(false, func(db *storage.DB) error {
			n, err := db.Maintenance().CompactHistory(ctx, t)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "removed %d versions written before %s; replicas behind them start again from current records (410 SEQUENCE_COMPACTED)\n", n, t.Format(time.RFC3339))
			return nil
		})
	case "import":
		// An alias of import --db for a history export (historyimport.go).
		if err := f.parse(args); err != nil {
			return err
		}
		if f.NArg() != 1 {
			return errors.New("history import: give one file, written by export --history")
		}
		hist, err := historyInputs([]importInput{{f.Arg(0), f.Arg(0)}})
		if err != nil {
			return err
		} else if hist == nil {
			return fmt.Errorf("history import: %s holds no incident with its history (export --history); import records with import", f.Arg(0))
		}
		return sf.with(false, func(db *storage.DB) error { return importHistoryLocal(ctx, db, hist, stdout) })
	}
	return fmt.Errorf("history: unknown subcommand %q (compact or import)", sub)
}

func parseBefore(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("a date is required, such as 2026-01-01")
	}
	if t, err := incidentlib.ParseDate(s); err == nil {
		return t, nil
	}
	t, err := incidentlib.ParseTimestamp(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a date (YYYY-MM-DD) nor an RFC 3339 time", s)
	}
	return t, nil
}
