package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// NATSCluster is an existing NATS cluster as an operator runs one, for the
// cluster mode's --nats: nats-server instances on loopback (client and
// route ports), clustered, with JetStream syncing every write, in operator
// mode: an operator, a system account and the library's account with
// JetStream, all as signed JWTs, so that a client authenticates with a
// real .creds file.
type NATSCluster struct {
	Servers []*server.Server
	// URL is the servers' client URLs, comma-separated.
	URL string

	dir       string
	account   nkeys.KeyPair
	logs      *natsLog
	serverLog []*natsLog
}

// StartNATSCluster starts n servers and waits until JetStream has a
// leader and the library's account is enabled on every server; they are
// shut down at the test's end.
func StartNATSCluster(tb testing.TB, n int) *NATSCluster {
	tb.Helper()
	dir := tb.TempDir()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, _ := okp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "test-operator"
	ojwt, err := oc.Encode(okp)
	must(err)
	_, sysPub, sysJWT := signedAccount(tb, okp, "SYS", nil)
	accKP, accPub, accJWT := signedAccount(tb, okp, "incidentlib", func(ac *jwt.AccountClaims) {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	})

	c := &NATSCluster{dir: dir, account: accKP, logs: &natsLog{}}
	var routes []string
	routeAddrs := make([]string, n)
	for i := range n {
		routeAddrs[i] = FreeAddr(tb)
		routes = append(routes, "nats-route://"+routeAddrs[i])
	}
	var urls []string
	for i := range n {
		conf := fmt.Sprintf(`
server_name: ext%d
listen: 127.0.0.1:-1
jetstream: {store_dir: %q, sync_interval: always}
cluster {
	name: ext
	listen: %s
	routes: [%s]
}
operator: %s
system_account: %s
resolver: MEMORY
resolver_preload: {
	%s: %s
	%s: %s
}
`, i+1, filepath.Join(dir, fmt.Sprintf("js%d", i+1)), routeAddrs[i], strings.Join(routes, ", "), ojwt, sysPub, sysPub, sysJWT, accPub, accJWT)
		path := filepath.Join(dir, fmt.Sprintf("ext%d.conf", i+1))
		must(os.WriteFile(path, []byte(conf), 0o600))
		opts, err := server.ProcessConfigFile(path)
		must(err)
		opts.NoSigs = true
		opts.DisableJetStreamBanner = true
		s, err := server.NewServer(opts)
		must(err)
		l := &natsLog{all: c.logs}
		c.serverLog = append(c.serverLog, l)
		s.SetLoggerV2(l, false, false, false)
		s.Start()
		c.Servers = append(c.Servers, s)
		tb.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		if !s.ReadyForConnections(10 * time.Second) {
			tb.Fatalf("NATS server %d did not start:\n%s", i+1, l)
		}
		urls = append(urls, s.ClientURL())
	}
	c.URL = strings.Join(urls, ",")
	deadline := time.Now().Add(time.Minute)
	for !c.ready(accPub) {
		if time.Now().After(deadline) {
			tb.Fatalf("the NATS cluster has no JetStream leader or account:\n%s", c.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// ready reports whether JetStream's leader knows every server, every
// server is current with it, and the account has JetStream everywhere.
func (c *NATSCluster) ready(account string) bool {
	peers := 0
	for _, s := range c.Servers {
		if s.JetStreamIsLeader() {
			peers = len(s.JetStreamClusterPeers())
		}
		if !s.JetStreamIsCurrent() {
			return false
		}
		acc, err := s.LookupAccount(account)
		if err != nil || !acc.JetStreamEnabled() {
			return false
		}
	}
	return peers == len(c.Servers)
}

// signedAccount makes an account's key pair and its JWT, signed by the
// operator, with its claims set by claims (nil: none).
func signedAccount(tb testing.TB, operator nkeys.KeyPair, name string, claims func(*jwt.AccountClaims)) (nkeys.KeyPair, string, string) {
	tb.Helper()
	kp, err := nkeys.CreateAccount()
	if err != nil {
		tb.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = name
	if claims != nil {
		claims(ac)
	}
	token, err := ac.Encode(operator)
	if err != nil {
		tb.Fatal(err)
	}
	return kp, pub, token
}

// UserCreds writes the .creds file of a new user of the library's account
// allowed to publish exactly pub and subscribe exactly sub (nothing more),
// and returns its path.
func (c *NATSCluster) UserCreds(tb testing.TB, name string, pub, sub []string) string {
	tb.Helper()
	return writeCreds(tb, c.dir, name, c.account, func(uc *jwt.UserClaims) {
		uc.Permissions.Pub.Allow.Add(pub...)
		uc.Permissions.Sub.Allow.Add(sub...)
	})
}

// StrangerCreds writes the .creds file of a well-formed user of an account
// the servers do not know, and returns its path.
func (c *NATSCluster) StrangerCreds(tb testing.TB) string {
	tb.Helper()
	kp, err := nkeys.CreateAccount()
	if err != nil {
		tb.Fatal(err)
	}
	return writeCreds(tb, c.dir, "stranger", kp, func(*jwt.UserClaims) {})
}

func writeCreds(tb testing.TB, dir, name string, account nkeys.KeyPair, perms func(*jwt.UserClaims)) string {
	tb.Helper()
	ukp, err := nkeys.CreateUser()
	if err != nil {
		tb.Fatal(err)
	}
	upub, _ := ukp.PublicKey()
	seed, _ := ukp.Seed()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	perms(uc)
	ujwt, err := uc.Encode(account)
	if err != nil {
		tb.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Violations returns the lines the servers logged about a client using a
// subject its permissions do not allow.
func (c *NATSCluster) Violations() []string {
	var out []string
	for line := range strings.SplitSeq(c.logs.String(), "\n") {
		if strings.Contains(line, "Violation") {
			out = append(out, line)
		}
	}
	return out
}

// Logs is what the servers logged (warnings and errors; notices too).
func (c *NATSCluster) Logs() string { return c.logs.String() }

// natsLog collects a server's log lines, and every server's in all.
type natsLog struct {
	mu  sync.Mutex
	b   strings.Builder
	all *natsLog
}

func (l *natsLog) add(level, format string, v ...any) {
	line := level + " " + fmt.Sprintf(format, v...) + "\n"
	l.mu.Lock()
	l.b.WriteString(line)
	l.mu.Unlock()
	if l.all != nil {
		l.all.add(level, format, v...)
	}
}

func (l *natsLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *natsLog) Noticef(format string, v ...any) { l.add("[INF]", format, v...) }
func (l *natsLog) Warnf(format string, v ...any)   { l.add("[WRN]", format, v...) }
func (l *natsLog) Fatalf(format string, v ...any)  { l.add("[FTL]", format, v...) }
func (l *natsLog) Errorf(format string, v ...any)  { l.add("[ERR]", format, v...) }
func (l *natsLog) Debugf(format string, v ...any)  {}
func (l *natsLog) Tracef(format string, v ...any)  {}

// DocNATSPermissions reads the subject permissions that the section
// "An existing NATS" of docs/cluster.md (at path) lists for --nats: the
// backquoted subjects of its "- publish:" and "- subscribe:" items.
func DocNATSPermissions(tb testing.TB, path string) (pub, sub []string) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	in := false
	var cur *[]string
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, "## An existing NATS")
			cur = nil
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "- publish:"):
			cur = &pub
		case strings.HasPrefix(line, "- subscribe:"):
			cur = &sub
		case strings.HasPrefix(line, "- ") || strings.TrimSpace(line) == "":
			cur = nil
		}
		if cur == nil {
			continue
		}
		parts := strings.Split(line, "`")
		for i := 1; i < len(parts); i += 2 {
			*cur = append(*cur, parts[i])
		}
	}
	if len(pub) == 0 || len(sub) == 0 {
		tb.Fatalf("%s lists no publish or no subscribe permissions for --nats", path)
	}
	return pub, sub
}
