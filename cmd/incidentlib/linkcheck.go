package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/incidentlib/incidentlib/linkcheck"
	"github.com/incidentlib/incidentlib/storage"
)

// linkcheckFlags are the flags of the link checker, in linkcheck and in
// serve (--linkcheck-interval).
type linkcheckFlags struct {
	perHost      *int
	concurrency  *int
	timeout      *time.Duration
	allowPrivate *bool
}

func addLinkcheckFlags(f *flags) linkcheckFlags {
	def := linkcheck.DefaultConfig()
	lf := linkcheckFlags{
		perHost:     f.count("linkcheck-per-host", def.PerHost, 1, "source links checked at once on one host, in requests (at most 64)"),
		concurrency: f.count("linkcheck-concurrency", def.Concurrency, 1, "source links checked at once in all, in requests (at most 1024)"),
		timeout:     f.duration("linkcheck-timeout", def.Timeout, false, "longest check of one link, redirects and retries included"),
		allowPrivate: f.boolean("linkcheck-allow-private", false,
			"let link checks reach loopback, private, link-local (cloud metadata), unique-local, CGNAT and multicast addresses; off, such links record status 0 and the reason"),
	}
	f.checks = append(f.checks, func() error {
		if *lf.perHost > 64 {
			return fmt.Errorf("--linkcheck-per-host must be at most 64, got %d", *lf.perHost)
		}
		if *lf.concurrency > 1024 {
			return fmt.Errorf("--linkcheck-concurrency must be at most 1024, got %d", *lf.concurrency)
		}
		return nil
	})
	return lf
}

// checker builds the link checker with its own outbound client (pool
// sized per host, no metrics: its host label would have a value per
// source host).
func (lf linkcheckFlags) checker(logger *slog.Logger) (*linkcheck.Checker, error) {
	cfg := linkcheck.DefaultConfig()
	cfg.PerHost, cfg.Concurrency, cfg.Timeout, cfg.Logger = *lf.perHost, *lf.concurrency, *lf.timeout, logger
	cfg.AllowPrivate = *lf.allowPrivate
	return linkcheck.New(linkcheck.ClientConfig(cfg), cfg)
}

// runLinkcheck checks every source link of a store once and records the
// results; the server must be stopped (or use serve --linkcheck-interval).
func runLinkcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("linkcheck", getenv, stderr)
	sf := addStoreFlags(f)
	lf := addLinkcheckFlags(f)
	if err := f.parse(args); err != nil {
		return err
	}
	lc, err := lf.checker(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer lc.Close()
	return sf.with(false, func(db *storage.DB) error {
		sum, err := lc.Run(ctx, db.Incidents())
		fmt.Fprintln(stdout, "linkcheck:", sum.String())
		return err
	})
}
