package main

import (
	"bufio"
	"context"
	"io"

	"github.com/incidentlib/incidentlib/storage"
)

// runExport is `incidentlib export`: the store's records, or with --history
// every incident's history, on standard output.
func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("export", getenv, stderr)
	sf := addStoreFlags(f)
	history := f.boolean("history", false, "write every incident's history (each version with its record, deleted incidents too) instead of the current records; read back with import (or its alias history import)")
	if err := f.parse(args); err != nil {
		return err
	}
	return sf.with(true, func(db *storage.DB) error {
		w := bufio.NewWriterSize(stdout, 1<<20)
		export := db.Maintenance().Export
		if *history {
			export = db.Versions().ExportHistory
		}
		if err := export(ctx, w); err != nil {
			return err
		}
		return w.Flush()
	})
}
