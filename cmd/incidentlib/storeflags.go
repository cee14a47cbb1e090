package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

const defaultDB = "./data/incidentlib.db"

// storeFlags are the flags of every command that opens the store.
type storeFlags struct {
	path        *string
	openTimeout *time.Duration
	recordCache *int
	upstream    *string // links to ids not in the store resolve from here (outboundflags.go)
	// allowSelfReview lets a reviewer approve what they wrote (a library
	// of one person; storage.Options.AllowSelfReview).
	allowSelfReview *bool
}

func addStoreFlags(f *flags) storeFlags {
	return storeFlags{
		path:        f.str("db", defaultDB, "path of the bbolt database file"),
		openTimeout: f.duration("open-timeout", time.Second, false, "how long to wait for a database file another process holds"),
		recordCache: f.count("record-cache", 10_000, 0, "decoded records kept in memory, in records; 0 turns the cache off"),
		upstream:    addUpstreamFlag(f),
		allowSelfReview: f.boolean("allow-self-review", false,
			"let a reviewer approve an incident they wrote a version of since its last approval (a library of one person); otherwise SELF_REVIEW"),
	}
}

// open opens the store the flags name.
func (s storeFlags) open(readOnly bool) (*storage.DB, error) {
	return s.openObserved(readOnly, nil, nil, 0)
}

// openObserved is open with observeCommit, if not nil, receiving the
// duration of every write commit (serve's metrics:
// storage.Options.ObserveCommit), logger, if not nil, the store's report
// of a corrupt file or a full disk, and the record size limit maxRecord
// (storage.Options.MaxRecordBytes; 0 for the default).
func (s storeFlags) openObserved(readOnly bool, observeCommit func(time.Duration), logger *slog.Logger, maxRecord int) (*storage.DB, error) {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return nil, err
	}
	gloss, err := seeds.Glossary(tax) // seeds the store's glossary (storage.Options.Glossary)
	if err != nil {
		return nil, err
	}
	if readOnly {
		if _, err := os.Stat(*s.path); err != nil {
			return nil, fmt.Errorf("open %s: %w", *s.path, err)
		}
	}
	return storage.Open(*s.path, storage.Options{
		OpenTimeout: *s.openTimeout, Taxonomy: tax, Glossary: gloss, ReadOnly: readOnly, RecordCache: *s.recordCache,
		UpstreamLinks: *s.upstream != "", ObserveCommit: observeCommit, Logger: logger, MaxRecordBytes: maxRecord,
		AllowSelfReview: *s.allowSelfReview,
	})
}

// with opens the store, runs fn on it and closes it.
func (s storeFlags) with(readOnly bool, fn func(*storage.DB) error) error {
	db, err := s.open(readOnly)
	if err != nil {
		return err
	}
	defer db.Close()
	if !readOnly {
		// A cluster node's writes come from the cluster's log only.
		if err := db.ClusterLog().RefuseIfLogged(context.Background(), "this command"); err != nil {
			return err
		}
	}
	return fn(db)
}
