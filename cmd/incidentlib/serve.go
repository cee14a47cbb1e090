package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/cmd/internal/clusternode"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/admin"
	"github.com/incidentlib/incidentlib/server/metrics"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newFlags("serve", getenv, stderr)
	addr := f.str("addr", "127.0.0.1:8080", "address to listen on")
	sf := addStoreFlags(f)
	xf := addSearchFlags(f, sf) // the full-text index (searchflags.go)
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
	mf := addMCPFlags(f)        // the MCP endpoint /mcp (mcpflags.go)
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
	if p, err := db.Incidents().InterruptedImport(ctx); err == nil && p != nil {
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
		if err := db.ClusterLog().RefuseIfLogged(ctx, "serve"); err != nil {
			return fmt.Errorf("%w (or start it with its cluster flags)", err)
		}
	}
	if *seed == "auto" && of.primary() == "" && member == nil { // a replica's incidents come from its primary, a node's from the log
		incs, err := seeds.Incidents()
		if err != nil {
			return err
		}
		res, err := db.Incidents().ImportIncidents(ctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true, OnlyIfNew: true})
		if err != nil {
			return fmt.Errorf("load the seeds: %w", err)
		}
		if res.Created > 0 {
			logger.Info("loaded the seed incidents", "count", res.Created)
		}
	}

	// Search translates through the store's glossary (seeded from the
	// built-in one, changed by admins): a change recompiles it.
	searchSvc, searchQueue, stopSearch, err := xf.start(ctx, db, db.Taxonomies(), logger) // catches up with the store first
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
	cfg := mf.config(sub.config(pu.config(lf.config(ef.config(server.Config{Prod: *prod, QueryCacheSize: *queryCache, Logger: logger, SearchQueue: searchQueue, Primary: of.primary(),
		AdminToken: *adminToken, BackupDir: filepath.Dir(db.Path()), GenericExecutor: *executor == "gqlgen"}, of)))))
	// Two values: the reads and the one write side. A store alone writes
	// its own file; a cluster node writes through the cluster's log.
	var (
		reads  server.Reads       = db.Reads()
		writes incidentlib.Writer = db.Writer()
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
