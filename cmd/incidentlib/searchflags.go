package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
	"github.com/incidentlib/incidentlib/search"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

// searchFlags locate the search index of the store.
type searchFlags struct {
	path        *string
	concurrency *int
	store       storeFlags
}

func addSearchFlags(f *flags, sf storeFlags) searchFlags {
	return searchFlags{
		path:  f.str("search-index", "", "directory of the full-text search index; empty: the --db path with .search appended; off: no search"),
		store: sf,
	}
}

// addServing adds the flags of the index serve runs.
func (s *searchFlags) addServing(f *flags) {
	s.concurrency = f.count("search-concurrency", runtime.GOMAXPROCS(0), 1,
		"searches run at once, in searches; the others wait their turn in arrival order (default: the cores Go uses, GOMAXPROCS)")
}

// indexPath is the index's directory, "" when search is off.
func (s searchFlags) indexPath() string {
	switch *s.path {
	case "off":
		return ""
	case "":
		return *s.store.path + ".search"
	}
	return *s.path
}

// start opens the index for serve, catching it up with the store (and
// rebuilding it if it belongs to another store or program version), and
// keeps it following the store's commits until stop; queries are
// translated through gloss (docs/search.md, "Across languages"). svc and
// queue (the same index, for /metrics) are nil when search is off.
func (s searchFlags) start(ctx context.Context, db *storage.DB, gloss glossary.Reader, logger *slog.Logger) (svc incidentlib.SearchService, queue metrics.SearchQueue, stop func(), err error) {
	path := s.indexPath()
	if path == "" {
		return nil, nil, func() {}, nil
	}
	began := time.Now()
	opts := search.Options{Logger: logger, Follow: true, StoreID: db.StoreID(), Glossary: gloss}
	if s.concurrency != nil {
		opts.Concurrency = *s.concurrency
	}
	x, err := search.Open(ctx, db.Incidents(), path, opts)
	if errors.Is(err, search.ErrRebuild) {
		logger.Warn("rebuilding the search index", "reason", err.Error())
		x, err = search.Rebuild(ctx, db.Incidents(), path, opts)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	logger.Info("search index ready", "path", path, "seq", x.Seq(), "took", time.Since(began).String())
	return x, x, func() {
		if err := x.Close(); err != nil { // stops following the store
			logger.Warn("closing the search index", "err", err)
		}
	}, nil
}

// check compares the index with the store and prints what it found. A
// missing index or one pending catch-up is not a failure.
func (s searchFlags) check(ctx context.Context, db *storage.DB, stdout io.Writer) (failures int, err error) {
	path := s.indexPath()
	if path == "" {
		return 0, nil
	}
	lines, failed, err := search.CheckLines(ctx, db.Incidents(), path, search.Options{StoreID: db.StoreID()})
	if err != nil {
		return 0, err
	}
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	if failed {
		return len(lines), nil
	}
	return 0, nil
}
