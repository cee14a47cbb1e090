package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/cmd/internal/clusternode"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/admin"
	"github.com/incidentlib/incidentlib/server/metrics"
	"github.com/incidentlib/incidentlib/storage"
)

const defaultDB = "./data/incidentlib.db"

// storeFlags are the flags of every command that opens the store.
type storeFlags struct {
	path        *string
	openTimeout *time.Duration
	recordCache *int
	upstream    *string // links to ids not in the store resolve from here (follow.go)
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
	if readOnly {
		if _, err := os.Stat(*s.path); err != nil {
			return nil, fmt.Errorf("open %s: %w", *s.path, err)
		}
	}
	return storage.Open(*s.path, storage.Options{
		OpenTimeout: *s.openTimeout, Taxonomy: tax, ReadOnly: readOnly, RecordCache: *s.recordCache,
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
		if err := db.RefuseIfLogged(context.Background(), "this command"); err != nil {
			return err
		}
	}
	return fn(db)
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("serve", getenv, stderr)
	addr := f.str("addr", "127.0.0.1:8080", "address to listen on")
	sf := addStoreFlags(f)
	xf := addSearchFlags(f, sf) // the full-text index (search.go)
	xf.addServing(f)
	of := addOutboundFlags(f, sf)
	cf := addClusterFlags(f) // cluster mode (clusterflags.go)
	f.checks = append(f.checks, func() error { return cf.excludes(of) })
	seed := f.str("seed", "auto", "auto: load the seed incidents into a new, empty store; none: taxonomy only")
	prod := f.boolean("prod", false, "production mode: no playground, no introspection")
	adminToken := f.str("admin-token", "", "the bootstrap admin token (author admin): every mutation, token management and /admin/backup; without it the store's API tokens (incidentlib token add) still write (prefer the environment variable: flags show in ps)")
	f.checks = append(f.checks, func() error {
		if err := admin.CheckAdminToken(*adminToken); err != nil {
			return fmt.Errorf("--admin-token: %v", err)
		}
		return nil
	})
	queryCache := f.count("query-cache", 1000, 1, "parsed GraphQL documents kept, in documents")
	executor := f.str("executor", "fast", "fast: read queries over the incident graph are answered in one pass (graph/fast.go), anything else by gqlgen's executor; gqlgen: every operation by gqlgen's executor")
	f.checks = append(f.checks, func() error {
		if *executor != "fast" && *executor != "gqlgen" {
			return fmt.Errorf("--executor must be fast or gqlgen, got %q", *executor)
		}
		return nil
	})
	logLevel := f.str("log-level", "info", "debug, info, warn or error")
	ef := addEdgeFlags(f)     // response cache, HTTP caching, APQ, trusted documents, pprof (edgeflags.go)
	pu := addPublicURLFlag(f) // --public-url, the Atom feed's links (publicurlflag.go)
	// Request limits, rate limit, CORS, introspection, memory limit (limitflags.go).
	lf := addLimitFlags(f)
	sub := addSubscribeFlags(f) // GraphQL subscriptions (subscribeflags.go)
	// The control socket: token add --db while serving (controlsocket.go).
	ctl := addControlSocketFlag(f, sf)
	readHeader := f.duration("read-header-timeout", 5*time.Second, false, "time to read a request's headers")
	readTimeout := f.duration("read-timeout", 30*time.Second, false, "time to read a whole request")
	writeTimeout := f.duration("write-timeout", 60*time.Second, false, "time to write a response")
	idleTimeout := f.duration("idle-timeout", 120*time.Second, false, "how long an idle keep-alive connection stays open")
	shutdownTimeout := f.duration("shutdown-timeout", 15*time.Second, false, "how long in-flight requests may finish after SIGTERM")
	takeTurns := f.boolean("take-turns", false, "after each response a keep-alive connection yields its core to the connections waiting, so that under load they take turns (server/turns.go): a shorter tail for expensive uncached pages under clients that answer at once, a longer one for cheap and cached answers (README); false: net/http's order, where a connection whose next request is already in is served again at once")
	// The garbage collector's budget (server/gc.go): a GraphQL request
	// allocates about 60 bytes of garbage per byte it answers, so the
	// collector's work per request falls as the budget grows; the heap
	// peaks near (1 + percent/100) times the live heap, which --memory-limit
	// can cap.
	gcPercent := f.count("gc-percent", server.DefaultGCPercent, server.MinGCPercent,
		fmt.Sprintf("garbage collector budget, in percent of the live heap that may be allocated before the next collection (replaces GOGC); at most %d", server.MaxGCPercent))
	f.checks = append(f.checks, func() error {
		if *gcPercent > server.MaxGCPercent {
			return fmt.Errorf("--gc-percent must be %d to %d, got %d", server.MinGCPercent, server.MaxGCPercent, *gcPercent)
		}
		return nil
	})
	f.checks = append(f.checks, func() error {
		if *seed != "auto" && *seed != "none" {
			return fmt.Errorf("--seed must be auto or none, got %q", *seed)
		}
		return nil
	})
	if err := f.parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %v", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	stopTracing, err := startTracing(ctx, getenv, logger) // OTEL_* (tracing.go), flushed last
	if err != nil {
		return err
	}
	defer stopTracing()
	if err := lf.applyMemoryLimit(); err != nil {
		return err
	}
	if _, err := server.SetGCPercent(*gcPercent); err != nil {
		return fmt.Errorf("--gc-percent: %v", err)
	}

	// The metrics come first: they observe the store's commits.
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return err
	}
	var node *cluster.Node // a cluster node's, started before its store opens (a new one fetches a snapshot)
	if cf.enabled() {
		if node, err = cf.start(ctx, *sf.path, logger); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	db, err := sf.openObserved(false, m.ObserveCommit, logger, int(*lf.maxRecord))
	if err != nil && node != nil {
		node.Close()
	}
	if err != nil {
		// A damaged or empty file: the message names the file (and the
		// page) and says what to do; serve does not start on it.
		return fmt.Errorf("serve: %w", err)
	}
	defer db.Close()
	if p, err := db.InterruptedImport(ctx); err == nil && p != nil {
		logger.Warn(p.String(), "db", db.Path())
	}
	var member *cluster.Member // a cluster node's: writes go through the cluster's log
	if node != nil {
		if member, err = cf.join(ctx, node, db, *seed == "auto", reg, logger); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer member.Close()
	}
	if member == nil {
		if err := db.RefuseIfLogged(ctx, "serve"); err != nil {
			return fmt.Errorf("%w (or start it with its cluster flags)", err)
		}
	}
	if *seed == "auto" && of.primary() == "" && member == nil { // a replica's incidents come from its primary, a node's from the log
		incs, err := seeds.Incidents()
		if err != nil {
			return err
		}
		res, err := db.ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true, OnlyIfNew: true})
		if err != nil {
			return fmt.Errorf("load the seeds: %w", err)
		}
		if res.Created > 0 {
			logger.Info("loaded the seed incidents", "count", res.Created)
		}
	}

	searchSvc, stopSearch, err := xf.start(ctx, db, logger) // catches up with the store first
	if err != nil {
		return err
	}
	defer stopSearch()

	client, err := of.client(reg)
	if err != nil {
		return err
	}
	incidents, err := of.incidents(db, client, reg, logger) // the store, then any upstream; nil: the store alone
	if err != nil {
		return err
	}
	cfg := sub.config(pu.config(lf.config(ef.config(server.Config{Prod: *prod, QueryCacheSize: *queryCache, Logger: logger, Primary: of.primary(),
		AdminToken: *adminToken, BackupDir: filepath.Dir(db.Path()), GenericExecutor: *executor == "gqlgen"}, of))))
	// Two values: the reads and the one write side. A store alone writes
	// its own file; a cluster node writes through the cluster's log.
	var (
		reads  server.Reads       = db
		writes incidentlib.Writer = db
	)
	if member != nil {
		node := clusternode.NewStore(db, member.Writer)
		reads, writes = node.Reads, node.Writes
		cfg.Stale = member.Stale // every response marked while the node has no quorum (server.StaleHeader, extensions.stale)
	}
	srv, _, err := server.Assemble(reads, writes, incidents, searchSvc, m, cfg)
	if err != nil {
		return err
	}
	stopControl, err := ctl.start(controlTokens{Writes: writes, Reads: reads}, logger)
	if err != nil {
		return err
	}
	defer stopControl()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	var handler http.Handler = srv
	if member != nil {
		handler = clusternode.IdempotencyKeys(srv)
	}
	hs := httpServer(handler, httpOptions{
		readHeader: *readHeader, read: *readTimeout, write: *writeTimeout, idle: *idleTimeout,
		takeTurns: *takeTurns, logger: logger,
	})
	hs.RegisterOnShutdown(srv.StopLongPolls)
	hs.RegisterOnShutdown(srv.StopSubscriptions) // each stream completes
	stopPprof, err := ef.startPprof(logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopPprof()
	if member != nil {
		go followReadiness(ctx, member, srv) // ready once caught up with the log
	} else {
		jobs, err := of.start(ctx, db, client, srv, reg, logger) // marks the server ready
		if err != nil {
			ln.Close()
			return err
		}
		defer jobs.stop()
	}
	logger.Info("serving", "addr", ln.Addr().String(), "db", db.Path(), "prod", *prod, "admin_token", *adminToken != "")
	fmt.Fprintf(stdout, "incidentlib serving on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	srv.SetReady(false)
	logger.Info("shutting down", "timeout", shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("shutdown did not finish in time", "err", err)
	}
	if err := srv.WaitSubscriptions(sctx); err != nil { // WebSockets are not hs's to wait for
		logger.Warn("subscription streams did not finish in time", "err", err)
	}
	return nil
}

func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	f := newFlags("import", getenv, stderr)
	sf := addStoreFlags(f)
	rf := addRemoteFlags(f, "send the records to the running server at this URL (importIncidents) instead of opening --db; IL-JSON only")
	chunk := f.count("chunk", 1000, 0, "with --server: records per request, each request all or nothing; 0 sends all in one (held in memory)")
	batch := f.count("batch", 2000, 1, "records written per transaction, in records (and at most 16MiB of them); memory grows with it")
	maxRecord := addMaxRecordFlag(f)
	format := f.str("format", "", "the format of every file: "+formatList()+"; empty detects each file's format")
	skipBad := f.boolean("skip-bad", false, "write the good records and list the bad ones, instead of writing nothing")
	f.checks = append(f.checks, func() error {
		if *format != "" && !importer.Format(*format).IsValid() {
			return fmt.Errorf("--format must be one of %s, got %q", formatList(), *format)
		}
		return nil
	})
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() == 0 {
		return errors.New("import: name at least one file or directory (or - for standard input)")
	}
	// The live heap of an import is one batch and the ids: a larger
	// collector budget costs little memory and saves a third of the time;
	// a soft limit of 512MiB (unless GOMEMLIMIT) keeps its peaks down.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	if getenv("GOMEMLIMIT") == "" && os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(512 << 20))
	}
	dir := spoolDir(*sf.path)
	if rf.remote() {
		dir = os.TempDir()
	}
	inputs, cleanup, err := importInputs(f.Args(), stdin, dir)
	defer cleanup()
	if err != nil {
		return err
	}
	if hist, err := historyInputs(inputs); err != nil {
		return err
	} else if hist != nil { // export --history's lines (importhistory.go)
		if *skipBad {
			return errors.New("import: a history import writes all or nothing; --skip-bad is for records")
		}
		if rf.remote() {
			return importHistoryRemote(ctx, rf, hist, stdout, stderr)
		}
		return sf.with(false, func(db *storage.DB) error { return importHistoryLocal(ctx, db, hist, stdout) })
	}
	if rf.remote() {
		return importRemote(ctx, rf, inputs, *chunk, int(*maxRecord), stdout, stderr)
	}
	files, skipped, ok, err := streamFiles(inputs, *format)
	if err != nil {
		return err
	}
	return sf.with(false, func(db *storage.DB) error {
		if ok {
			err := importStream(ctx, db, files, skipped, importOptions{skipBad: *skipBad, maxRecord: int(*maxRecord), batch: *batch,
				stopAfter: stopAfterHook(getenv)}, stdout, stderr)
			if err != errNeedsPlan {
				return err
			}
		}
		res, err := readCollections(inputs, *format, int(*maxRecord))
		if err != nil {
			return err
		}
		return importLocal(ctx, db, res, *skipBad, stdout, stderr)
	})
}

func formatList() string {
	names := make([]string, len(importer.Formats))
	for i, f := range importer.Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// httpOptions are serve's settings of its http.Server.
type httpOptions struct {
	readHeader, read, write, idle time.Duration
	takeTurns                     bool // server.TakeTurns
	logger                        *slog.Logger
}

// httpServer is the http.Server serve runs h on.
func httpServer(h http.Handler, o httpOptions) *http.Server {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.readHeader,
		ReadTimeout:       o.read,
		WriteTimeout:      o.write,
		IdleTimeout:       o.idle,
		ErrorLog:          slog.NewLogLogger(o.logger.Handler(), slog.LevelWarn),
	}
	if o.takeTurns {
		server.TakeTurns(hs)
	}
	return hs
}
