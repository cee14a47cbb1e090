// Package cluster runs a library on several nodes with no single writer:
// NATS JetStream is the replicated log of every write, and each node
// applies the log in order to its own store (docs/cluster.md).
//
// A Node is one member: an embedded NATS server joined to its peers by
// routes that authenticate with a shared secret (no client port: the node
// connects in process), or a connection to an existing NATS cluster; the
// stream of writes, replicated on three servers in file storage; the Log
// that publishes writes with an idempotency key and an expected
// per-incident sequence and hands the stream, in order, to an apply
// function; and the tracking of the quorum. Writer (writer.go) and Applier
// (apply.go) put the library's writes on the log and apply them to a
// store.
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Config.
const (
	DefaultWriteTimeout = 5 * time.Second
	DefaultStartTimeout = 30 * time.Second
	DefaultDedupeWindow = 10 * time.Minute
	DefaultReplicas     = 3
	// DefaultStream is the name of the stream of writes.
	DefaultStream = "INCIDENTLIB"
	// MaxMessageBytes is the largest message the log takes: NATS's
	// default max_payload (1 MiB). A record (--max-record) must fit with
	// room for the envelope; imports are split into chunks below it.
	MaxMessageBytes = 1 << 20
	// routeUser is the user name of the routes; the secret is the
	// password.
	routeUser = "incidentlib"
)

// Config configures a Node. Either Listen (an embedded NATS server) or
// URL (an existing NATS cluster) is set.
type Config struct {
	// ClusterName names the cluster (the NATS cluster name); NodeName this
	// node (the NATS server name, unique in the cluster).
	ClusterName, NodeName string
	// Listen is the embedded server's route address, HOST:PORT; Peers are
	// the route addresses of the members (a node may list itself).
	Listen string
	Peers  []string
	// Advertise, if set, is the route address the peers are told to reach
	// this node at (behind NAT, a proxy or a Kubernetes service), instead
	// of Listen.
	Advertise string
	// Secret authenticates the routes: a route that does not present it
	// is refused.
	Secret string
	// RouteTLS, if set, makes the routes TLS (certificates both ways).
	RouteTLS *tls.Config
	// StoreDir is the embedded server's JetStream directory
	// (<db>.jetstream).
	StoreDir string
	// URL and CredsFile: an existing NATS cluster instead of an embedded
	// server.
	URL, CredsFile string
	// Stream names the stream of writes (default DefaultStream); Replicas
	// is its replication (default DefaultReplicas, at most the number of
	// members of an embedded cluster).
	Stream   string
	Replicas int
	// WriteTimeout bounds the wait for a write's acknowledgement;
	// StartTimeout the wait for a quorum at start; DedupeWindow is how
	// long the stream remembers idempotency keys.
	WriteTimeout, StartTimeout, DedupeWindow time.Duration
	Logger                                   *slog.Logger
}

func (c *Config) defaults() {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.DedupeWindow == 0 {
		c.DedupeWindow = DefaultDedupeWindow
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Check reports what is wrong with c, naming the flag.
func (c *Config) Check() error {
	switch {
	case c.URL == "" && c.Listen == "":
		return errors.New("cluster: --cluster-listen or --nats is required")
	case c.URL != "" && c.Listen != "":
		return errors.New("cluster: --cluster-listen and --nats exclude each other")
	case c.URL == "" && strings.TrimSpace(c.Secret) == "":
		return errors.New("cluster: --cluster-secret-file is required and must hold the shared secret")
	case c.URL == "" && len(c.Secret) < 16:
		return errors.New("cluster: the secret of --cluster-secret-file must be at least 16 bytes")
	case c.URL == "" && !validName(c.ClusterName):
		return fmt.Errorf("cluster: --cluster-name %q must be letters, digits, - and _", c.ClusterName)
	case !validName(c.NodeName):
		return fmt.Errorf("cluster: --node-name %q must be letters, digits, - and _", c.NodeName)
	case c.Replicas < 0 || c.Replicas > 5:
		return fmt.Errorf("cluster: replicas must be 1 to 5, got %d", c.Replicas)
	}
	if c.URL == "" {
		if _, _, err := splitHostPort(c.Listen); err != nil {
			return fmt.Errorf("cluster: --cluster-listen: %v", err)
		}
		for _, p := range c.Peers {
			if _, _, err := splitHostPort(p); err != nil {
				return fmt.Errorf("cluster: --cluster-peers: %v", err)
			}
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func splitHostPort(s string) (string, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("%q: bad port", s)
	}
	return h, n, nil
}

// Node is one member of the cluster: its NATS server (embedded) or
// connection, the stream and its quorum.
type Node struct {
	cfg Config
	srv *server.Server // nil with an external NATS
	nc  *nats.Conn
	js  jetstream.JetStream
	// stream is found or created by the first exchange that needs it.
	streamMu sync.Mutex
	stream   jetstream.Stream
	log      *slog.Logger
	quorum   quorum
	// metrics, if set, get whether this node leads the stream.
	metrics *Metrics
	leader  atomic.Bool
	current atomic.Bool
	health  health
	// want is the highest log position this node knows to be in the log;
	// bell wakes the follower (follow.go).
	want atomic.Uint64
	bell chan struct{}
	// heard is the highest position another node's bell told; hearing
	// is set while a Nudge of it is set for later (hear).
	heard   atomic.Uint64
	hearing atomic.Bool
	// erasures are the purges whose messages are still to erase
	// (erase.go).
	erasures eraseQueue
}

// Start starts the node: the embedded server (routes to the peers), the
// in-process connection, and the stream, created if missing. It does not
// wait for a quorum: the stream is created or found once one exists
// (Ready), and reads go on without one.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	cfg.defaults()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeName), bell: make(chan struct{}, 1)}
	n.quorum.init()
	var err error
	if cfg.URL == "" {
		token := randomToken()
		if n.srv, err = startEmbedded(cfg, token, n.log); err != nil {
			return nil, err
		}
		n.nc, err = nats.Connect("", append(n.connLogging(), nats.InProcessServer(n.srv), nats.Token(token), nats.Name(cfg.NodeName), nats.MaxReconnects(-1))...)
	} else {
		if err := checkExternal(cfg); err != nil { // external.go
			return nil, err
		}
		opts := append(n.connLogging(), nats.Name(cfg.NodeName), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true))
		if cfg.CredsFile != "" {
			opts = append(opts, nats.UserCredentials(cfg.CredsFile))
		}
		n.nc, err = nats.Connect(cfg.URL, opts...)
	}
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: connect: %w", err)
	}
	if n.js, err = jetstream.New(n.nc); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// startEmbedded runs the node's NATS server: JetStream in StoreDir,
// syncing every write before it is acknowledged, routes to the peers
// authenticated by the secret, and no client listener.
func startEmbedded(cfg Config, clientToken string, log *slog.Logger) (*server.Server, error) {
	host, port, _ := splitHostPort(cfg.Listen)
	var routes []*url.URL
	for _, p := range cfg.Peers {
		routes = append(routes, &url.URL{Scheme: "nats-route", User: url.UserPassword(routeUser, cfg.Secret), Host: p})
	}
	opts := &server.Options{
		ServerName: cfg.NodeName,
		// No client port anyone can use: the node connects in process.
		// nats-server starts its routes only after its client listener
		// (DontListen would hold them back for ever), so the listener is
		// on loopback, on a port the kernel picks, and takes only a
		// random token that never leaves this process.
		// MaxConn 1: the node's own connection fills it, so the listener
		// refuses every other connection, with the token or without.
		Host:          "127.0.0.1",
		Port:          server.RANDOM_PORT,
		Authorization: clientToken,
		MaxConn:       1,
		JetStream:     true,
		StoreDir:      cfg.StoreDir,
		SyncAlways:    true, // fsync each write before it is acknowledged
		NoSigs:        true,
		Cluster: server.ClusterOpts{
			Name: cfg.ClusterName, Host: host, Port: port,
			Username: routeUser, Password: cfg.Secret,
			TLSConfig: cfg.RouteTLS, TLSTimeout: 2,
			Advertise: cfg.Advertise,
			// The client listeners are nobody's business: not told to
			// clients, so a client sent to one node is not sent on to
			// another's.
			NoAdvertise: true,
			// A peer that stops answering (SIGSTOP, a cut link) loses its
			// routes within 15 seconds, not nats-server's default minutes.
			PingInterval: 5 * time.Second, MaxPingsOut: 3,
		},
		Routes:                 routes,
		DisableJetStreamBanner: true,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: embedded NATS server: %w", err)
	}
	srv.SetLoggerV2(&natsLogger{log: log.With("component", "nats")}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		go srv.Shutdown()
		return nil, fmt.Errorf("cluster: the embedded NATS server did not start (route listener %s)", cfg.Listen)
	}
	return srv, nil
}

// connLogging sends the connection's asynchronous errors (a permission
// refused, a slow consumer) and its losses and recoveries to the node's
// log, instead of nats.go's default of printing them to stderr.
func (n *Node) connLogging() []nats.Option {
	log := n.log.With("component", "nats-client")
	return []nats.Option{
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("the connection to NATS reported an error", "subject", subject, "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("reconnected to NATS", "url", nc.ConnectedUrlRedacted()) }),
	}
}

// randomToken is the embedded server's client token: 32 random bytes.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ServerID returns the embedded server's id ("" with an external NATS):
// the name its routes present.
func (n *Node) ServerID() string {
	if n.srv == nil {
		return ""
	}
	return n.srv.ID()
}

// ClientAddr returns the embedded server's client listener address (""
// with an external NATS): on loopback, behind a token that never leaves
// the process, and full with the node's own connection.
func (n *Node) ClientAddr() string {
	if n.srv == nil {
		return ""
	}
	if a := n.srv.Addr(); a != nil {
		return a.String()
	}
	return ""
}

// RouteAddr returns the embedded server's route listener address.
func (n *Node) RouteAddr() string {
	if n.srv == nil {
		return ""
	}
	if a := n.srv.ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// NumRoutes is how many routes the embedded server has.
func (n *Node) NumRoutes() int {
	if n.srv == nil {
		return 0
	}
	return n.srv.NumRoutes()
}

// RouteNames returns the server names of the embedded server's
// registered routes (none with an external NATS). A route this server
// solicits is registered once the peer's INFO arrives, before the peer
// checked the secret it presented: a refused route is listed until the
// peer closes it.
func (n *Node) RouteNames() []string {
	if n.srv == nil {
		return nil
	}
	rz, err := n.srv.Routez(nil)
	if err != nil {
		return nil
	}
	var names []string
	for _, r := range rz.Routes {
		names = append(names, r.RemoteName)
	}
	return names
}

// Close closes the connection and shuts the embedded server down.
func (n *Node) Close() {
	n.quorum.stop()
	if n.nc != nil {
		n.nc.Close()
	}
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
}

// natsLogger sends the embedded server's log to slog: notices at debug
// (a node's own log stays about the library), warnings and errors as
// such.
type natsLogger struct{ log *slog.Logger }

func (l *natsLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Tracef(format string, v ...any)  {}
