package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/cluster"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/storage"
)

// clusterFlags are serve's flags of the cluster mode (cluster/,
// docs/cluster.md): an embedded NATS server joined to its peers, or an
// existing NATS cluster. Without --cluster-listen or --nats the server
// runs alone.
type clusterFlags struct {
	name, node, listen, peers, secretFile *string
	advertise                             *string
	tlsCert, tlsKey, tlsCA                *string
	natsURL, natsCreds                    *string
	writeTimeout, startTimeout, dedupe    *time.Duration
	replicas                              *int
	snapshotEvery                         *time.Duration
}

func addClusterFlags(f *flags) *clusterFlags {
	c := &clusterFlags{
		name:          f.str("cluster-name", "incidentlib", "the cluster's name (the NATS cluster name): letters, digits, - and _"),
		node:          f.str("node-name", "", "this node's name, unique in the cluster (the NATS server name); default the host name"),
		listen:        f.str("cluster-listen", "", "HOST:PORT of this node's route listener: runs an embedded NATS server joined to --cluster-peers (cluster mode)"),
		advertise:     f.str("cluster-advertise", "", "HOST:PORT the peers are told to reach this node's routes at (behind NAT, a proxy or a Kubernetes service); default --cluster-listen"),
		peers:         f.str("cluster-peers", "", "the route addresses HOST:PORT,HOST:PORT,... of the cluster's nodes (a node may list itself)"),
		secretFile:    f.str("cluster-secret-file", "", "file holding the cluster's shared secret (one line, at least 16 bytes): routes that do not present it are refused; required with --cluster-listen"),
		tlsCert:       f.str("cluster-tls-cert", "", "PEM certificate of this node's routes (TLS both ways; with --cluster-tls-key and --cluster-tls-ca)"),
		tlsKey:        f.str("cluster-tls-key", "", "PEM private key of --cluster-tls-cert"),
		tlsCA:         f.str("cluster-tls-ca", "", "PEM certificate authority the peers' route certificates must chain to"),
		natsURL:       f.str("nats", "", "URL of an existing NATS cluster with JetStream to use instead of an embedded server (cluster mode)"),
		natsCreds:     f.str("nats-creds", "", "NATS credentials file for --nats"),
		writeTimeout:  f.duration("cluster-write-timeout", cluster.DefaultWriteTimeout, false, "how long a write waits for the cluster's acknowledgement before it answers OUTCOME_UNKNOWN"),
		startTimeout:  f.duration("cluster-start-timeout", cluster.DefaultStartTimeout, false, "how long a starting node waits for a quorum before it serves its own store, marked stale"),
		dedupe:        f.duration("cluster-dedupe-window", cluster.DefaultDedupeWindow, false, "how long the stream remembers idempotency keys: a retry within it applies at most once"),
		snapshotEvery: f.duration("cluster-snapshot-interval", time.Hour, true, "how often the stream's leader stores a snapshot of its store, from which new and wiped nodes start; 0 turns it off"),
		replicas:      f.count("cluster-replicas", cluster.DefaultReplicas, 1, "copies of the stream of writes, in servers (at most the cluster's nodes, at most 5)"),
	}
	f.checks = append(f.checks, c.check)
	return c
}

// enabled reports whether serve runs as a cluster node.
func (c *clusterFlags) enabled() bool { return *c.listen != "" || *c.natsURL != "" }

func (c *clusterFlags) check() error {
	if !c.enabled() {
		for _, s := range []*string{c.peers, c.secretFile, c.tlsCert, c.tlsKey, c.tlsCA, c.natsCreds} {
			if *s != "" {
				return errors.New("--cluster-peers, --cluster-secret-file, --cluster-tls-* and --nats-creds need --cluster-listen or --nats")
			}
		}
		return nil
	}
	if *c.listen != "" && *c.natsURL != "" {
		return errors.New("--cluster-listen and --nats exclude each other")
	}
	if *c.listen != "" && *c.secretFile == "" {
		return errors.New("--cluster-secret-file is required with --cluster-listen")
	}
	if *c.replicas > 5 {
		return fmt.Errorf("--cluster-replicas must be 1 to 5, got %d", *c.replicas)
	}
	tlsSet := 0
	for _, s := range []*string{c.tlsCert, c.tlsKey, c.tlsCA} {
		if *s != "" {
			tlsSet++
		}
	}
	if tlsSet != 0 && tlsSet != 3 {
		return errors.New("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together")
	}
	_, err := c.config("x.db", nil)
	return err
}

// config is the node's configuration, its JetStream directory beside the
// store (<db>.jetstream).
func (c *clusterFlags) config(dbPath string, logger *slog.Logger) (cluster.Config, error) {
	cfg := cluster.Config{ClusterName: *c.name, NodeName: *c.node, Listen: *c.listen, Advertise: *c.advertise, URL: *c.natsURL, CredsFile: *c.natsCreds,
		StoreDir: dbPath + ".jetstream", Replicas: *c.replicas, WriteTimeout: *c.writeTimeout, StartTimeout: *c.startTimeout,
		DedupeWindow: *c.dedupe, Logger: logger}
	if cfg.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return cfg, fmt.Errorf("--node-name: %v", err)
		}
		cfg.NodeName = h
	}
	for p := range strings.SplitSeq(*c.peers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.Peers = append(cfg.Peers, p)
		}
	}
	if *c.secretFile != "" {
		b, err := os.ReadFile(*c.secretFile)
		if err != nil {
			return cfg, fmt.Errorf("--cluster-secret-file: %v", err)
		}
		cfg.Secret = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	if *c.tlsCert != "" {
		t, err := routeTLS(*c.tlsCert, *c.tlsKey, *c.tlsCA)
		if err != nil {
			return cfg, err
		}
		cfg.RouteTLS = t
	}
	if err := cfg.Check(); err != nil {
		return cfg, errors.New(strings.TrimPrefix(err.Error(), "cluster: "))
	}
	return cfg, nil
}

// routeTLS is the routes' TLS: this node's certificate, and the peers'
// verified against the CA both ways.
func routeTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-tls-cert/--cluster-tls-key: %v", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-tls-ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--cluster-tls-ca: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert}, nil
}

// joinCluster makes serve's store a cluster node's: the member follows
// the log into db, and a new cluster's seeds are published once through
// the empty stream.
func (c *clusterFlags) join(ctx context.Context, node *cluster.Node, db *storage.DB, seed bool, reg prometheus.Registerer, logger *slog.Logger) (*cluster.Member, error) {
	m, err := cluster.NewMetrics(reg)
	if err != nil {
		node.Close()
		return nil, err
	}
	// A library made a cluster node by `cluster init` becomes the
	// cluster's first snapshot before the node follows the stream: the
	// stream then starts from it on every node.
	if err := publishInitial(ctx, node, db, logger); err != nil {
		node.Close()
		return nil, err
	}
	tax, maxRecord := db.Incidents().RecordRules()
	mb, err := cluster.Attach(ctx, node, db.Writer(), db.Reads(), tax, maxRecord, m)
	if err != nil {
		return nil, err
	}
	if seed {
		go publishSeeds(ctx, mb, logger)
	}
	if *c.snapshotEvery > 0 {
		go publishSnapshots(ctx, mb, db, *c.snapshotEvery, logger)
	}
	return mb, nil
}

// start starts the node before its store opens: a node without a store
// file (new, or wiped) starts from the cluster's latest snapshot, then
// follows the stream from the snapshot's position.
func (c *clusterFlags) start(ctx context.Context, dbPath string, logger *slog.Logger) (*cluster.Node, error) {
	cfg, err := c.config(dbPath, logger)
	if err != nil {
		return nil, err
	}
	node, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dbPath); !errors.Is(err, os.ErrNotExist) {
		return node, nil
	}
	// A new node waits for its peers as long as it takes: it has no store
	// to serve meanwhile, and only the cluster knows whether it must start
	// from a snapshot (a library made a cluster is in no write of the
	// stream) or may start empty and follow the stream from its first
	// write.
	for {
		seq, ok, err := node.Bootstrap(ctx, dbPath, snapshotWait)
		switch {
		case incidentlib.ErrorCode(err) == incidentlib.EUNAVAILABLE && ctx.Err() == nil:
			logger.Warn("no quorum yet to look for the cluster's snapshot: this new node waits for its peers", "err", err)
			continue
		case err != nil:
			node.Close()
			return nil, fmt.Errorf("fetch the cluster's snapshot: %w", err)
		case ok:
			logger.Info("started from the cluster's snapshot", "log_seq", seq, "db", dbPath)
		}
		return node, nil
	}
}

// snapshotWait is how long a new node of a new cluster (an empty stream)
// waits for the snapshot `cluster init` publishes before it starts empty.
const snapshotWait = 10 * time.Second

// publishInitial publishes the first snapshot of a library made a
// cluster node by `cluster init` (a store at log position 0 that holds
// incidents), unless the cluster has one (this node published it before
// a restart, or the store came from it). It waits for a quorum as long as
// ctx lasts: the node's library must be the stream's start before the
// node follows the stream. A stream that holds writes and no snapshot
// began without this library: the node refuses to join it, since
// following it would mix the library with another history.
func publishInitial(ctx context.Context, node *cluster.Node, db *storage.DB, logger *slog.Logger) error {
	if seq, _, err := db.ClusterLog().LogSeq(ctx); err != nil || seq != 0 {
		return err
	}
	n, err := db.Incidents().CountIncidents(ctx, incidentlib.IncidentFilter{})
	if err != nil || n == 0 {
		return err
	}
	for {
		err := node.WaitQuorum(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logger.Warn("waiting for a quorum of the cluster to publish this library as its first snapshot: start the other nodes", "incidents", n, "err", err)
	}
	// The cluster's JetStream may still be settling (a new object store
	// answers "no responders" for a moment): what fails on the cluster's
	// side is tried again for a minute.
	for attempt := 1; ; attempt++ {
		published, err := publishLibrary(ctx, node, db, n)
		var refused libraryRefused
		switch {
		case err == nil:
			if published {
				logger.Info("published this library as the cluster's first snapshot", "incidents", n)
			}
			return nil
		case errors.As(err, &refused), ctx.Err() != nil, attempt >= 60:
			return err
		}
		logger.Warn("publishing this library as the cluster's first snapshot: trying again", "err", err, "attempt", attempt)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// libraryRefused is publishLibrary's refusal of a stream that began
// without the library: not tried again.
type libraryRefused struct{ error }

// publishLibrary publishes db's library (n incidents) as the cluster's
// first snapshot unless the cluster has one, and reports whether it did.
func publishLibrary(ctx context.Context, node *cluster.Node, db *storage.DB, n int) (bool, error) {
	ours, err := db.ClusterLog().ClusterLibrary(ctx)
	if err != nil {
		return false, err
	}
	theirs, has, err := node.SnapshotLibrary(ctx)
	if err != nil {
		return false, fmt.Errorf("the cluster's snapshots: %w", err)
	}
	switch {
	case has && theirs == ours:
		return false, nil // this library's (published before a restart, or the store came from it)
	case has && ours != "":
		return false, libraryRefused{fmt.Errorf("%s holds a library made a cluster node by `cluster init` (%d incidents), but the cluster holds the snapshot of another library: "+
			"following it would mix the two; make this library a new cluster (its own nodes, stream and snapshots), or import its export into the running cluster with `incidentlib import --server`",
			db.Path(), n)}
	case has:
		return false, nil // a store at position 0 from before library ids: as before
	}
	last, err := node.LastSeq(ctx)
	if err != nil {
		return false, err
	}
	if last > 0 {
		return false, libraryRefused{fmt.Errorf("%s holds a library made a cluster node by `cluster init` (%d incidents), but the cluster's stream began without it (%d writes, no snapshot): "+
			"start this node first on a new cluster (the others wait %s for its snapshot), or import its export into the running cluster with `incidentlib import --server`",
			db.Path(), n, last, snapshotWait)}
	}
	if err := node.PublishSnapshot(ctx, 0, ours, func(w io.Writer) error { _, err := db.Maintenance().Backup(ctx, w); return err }); err != nil {
		return false, fmt.Errorf("publish this library as the cluster's first snapshot: %w", err)
	}
	return true, nil
}

// publishSnapshots stores a snapshot of the node's store every interval
// while this node leads the stream (one node at a time takes them). On an
// existing NATS (--nats) no node's server leads the stream: each node, at
// a random phase of the interval, takes one when the latest is older than
// the interval, so about one node a time does.
func publishSnapshots(ctx context.Context, mb *cluster.Member, db *storage.DB, every time.Duration, logger *slog.Logger) {
	external := mb.Node.ServerID() == ""
	first := every
	if external {
		first = rand.N(every)
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timer.Reset(every)
		if !snapshotTurn(ctx, mb, external, every) {
			continue
		}
		seq := mb.Applier.Applied()
		if seq == 0 {
			// Nothing applied: a snapshot at position 0 is a library made
			// a cluster (cluster init), and would stop a new cluster's
			// seeds (publishSeeds).
			continue
		}
		library, err := db.ClusterLog().ClusterLibrary(ctx)
		if err == nil {
			err = mb.Node.PublishSnapshot(ctx, seq, library, func(w io.Writer) error { _, err := db.Maintenance().Backup(ctx, w); return err })
		}
		if err != nil {
			logger.Warn("the cluster's snapshot", "err", err)
		}
	}
}

// snapshotTurn reports whether this node takes the cluster's snapshot
// now: it leads the stream, or, on an existing NATS, the latest snapshot
// is older than the interval.
func snapshotTurn(ctx context.Context, mb *cluster.Member, external bool, every time.Duration) bool {
	if !external {
		return mb.Node.Leader()
	}
	_, at, ok, err := mb.Node.LatestSnapshot(ctx)
	return err == nil && (!ok || time.Since(at) >= every)
}

// publishSeeds publishes the seed incidents into a new cluster's empty
// stream, once: every node that starts on an empty stream tries, the
// stream keeps the first (the same idempotency key), and the import
// writes only into stores that never held incidents.
func publishSeeds(ctx context.Context, mb *cluster.Member, logger *slog.Logger) {
	if mb.WaitReady(ctx) != nil {
		return
	}
	last, err := mb.Node.LastSeq(ctx)
	if err != nil || last > 0 {
		return
	}
	if has, err := mb.Node.HasSnapshot(ctx); err != nil || has {
		return // the cluster started from a library (cluster init)
	}
	incs, err := seeds.Incidents()
	if err != nil {
		logger.Error("the seeds", "err", err)
		return
	}
	wctx := incidentlib.WithIdentity(cluster.WithIdempotencyKey(ctx, "seeds"), incidentlib.Identity{Name: "seeds", Role: incidentlib.RoleAdmin})
	res, err := mb.Writer.ImportIncidents(wctx, incs, incidentlib.ImportOptions{KeepUpdatedAt: true, OnlyIfNew: true})
	if err != nil {
		logger.Warn("publishing the seeds", "err", err)
		return
	}
	if res != nil && res.Created > 0 {
		logger.Info("published the seed incidents to the cluster", "count", res.Created)
	}
}

// followReadiness keeps /readyz on the member's readiness: ready once it
// caught up at start (or gave up waiting for a quorum), not ready while a
// newer version stopped it.
func followReadiness(ctx context.Context, mb *cluster.Member, srv *server.Server) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		srv.SetReady(mb.Ready())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// excludes refuses the flags a cluster node cannot take: a node's writes
// come from the log, not from a primary, and link checks would write its
// store alone.
func (c *clusterFlags) excludes(of *outboundFlags) error {
	if !c.enabled() {
		return nil
	}
	if of.primary() != "" {
		return errors.New("--follow and the cluster mode (--cluster-listen, --nats) exclude each other: a cluster node's writes come from the cluster's log")
	}
	if *of.linkcheckInterval > 0 {
		return errors.New("--linkcheck-interval is not available on a cluster node: its results would be written to one node's store only")
	}
	return nil
}

// The admin's writes go through the cluster's log too (cluster/admin.go):
// a token's secret is made on this node and only its hash is published.
