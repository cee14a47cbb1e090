package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// runBackup copies the store of a running server:
//
//	incidentlib backup --server URL --token T > FILE
//	incidentlib backup --server URL --token T --output FILE
//
// With --output the copy is written next to FILE, synced, checked (it must
// open and pass check) and only then renamed over FILE.
func runBackup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("backup", getenv, stderr)
	rf := addRemoteFlags(f, "the running server to copy (required)")
	output := f.str("output", "", "write the copy to this file (atomically, after checking it) instead of standard output")
	f.checks = append(f.checks, func() error {
		if *rf.server == "" {
			return fmt.Errorf("backup needs --server URL: the store of a stopped server is a plain file to copy")
		}
		return nil
	})
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("backup: unexpected arguments %q", f.Args())
	}
	if *output == "" {
		if fi, ok := stdout.(*os.File); ok {
			if st, err := fi.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				return errStdoutTerminal
			}
		}
	}
	r, err := rf.dial()
	if err != nil {
		return err
	}
	defer r.close()
	req, err := r.get(ctx, "/admin/backup")
	if err != nil {
		return err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("backup: %s answered %s: %s", r.base, resp.Status, strings.TrimSpace(string(msg)))
	}
	want, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		return fmt.Errorf("backup: %s sent no Content-Length", r.base)
	}
	if *output == "" {
		n, err := io.Copy(stdout, resp.Body)
		if err == nil && n != want {
			err = fmt.Errorf("the copy was cut short: %d of %d bytes", n, want)
		}
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		fmt.Fprintf(stderr, "backup: %d bytes from %s\n", n, r.base)
		return nil
	}
	return saveBackup(resp.Body, want, *output, stdout)
}

func saveBackup(body io.Reader, want int64, output string, stdout io.Writer) error {
	tmp, err := os.CreateTemp(filepath.Dir(output), filepath.Base(output)+".part-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, body)
	if err == nil && n != want {
		err = fmt.Errorf("the copy was cut short: %d of %d bytes", n, want)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	db, err := storage.Open(tmp.Name(), storage.Options{Taxonomy: tax, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("backup: the copy does not open: %w", err)
	}
	problems, err := db.Maintenance().Check(context.Background())
	db.Close()
	if err != nil {
		return fmt.Errorf("backup: checking the copy: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("backup: the copy fails check with %d problems, the first: %s", len(problems), problems[0])
	}
	if err := os.Rename(tmp.Name(), output); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backup: %d bytes to %s, check: ok\n", n, output)
	return nil
}

var errStdoutTerminal = errors.New("backup: standard output is a terminal; redirect it to a file (> FILE) or use --output FILE")
