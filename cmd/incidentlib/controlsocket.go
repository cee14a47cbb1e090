package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
)

// The control socket: a Unix socket beside the store through which
// `incidentlib token add|list|revoke --db PATH` manages the tokens of the
// server that holds the store (bbolt's lock keeps the command out of the
// file), so that the first token needs no restart and no admin token.
//
// It is guarded as PostgreSQL's peer authentication and Docker's socket
// are: the socket is mode 0600 in a directory only its owner can write,
// the command refuses a socket owned by another user or with looser
// permissions, and the server answers only peers of its own user (the
// kernel's credentials of the connection where the system gives them,
// controlsocket_linux.go). Only the token writes and the token list go
// over it; the writes go through the one write side (incidentlib.Writer),
// as the admin mutations do, so that a cluster node's go through the
// cluster's log.

// controlSocketSuffix names the default socket: the store's path and this.
const controlSocketSuffix = ".sock"

// maxSocketPath is the longest path a Unix socket may have (sun_path is
// 104 bytes on the BSDs and macOS, 108 on Linux, with its NUL).
const maxSocketPath = 103

// controlSocketFlag is --control-socket of serve and of the token command.
type controlSocketFlag struct {
	value *string
	db    *string
}

func addControlSocketFlag(f *flags, sf storeFlags) controlSocketFlag {
	c := controlSocketFlag{
		value: f.str("control-socket", "auto", "the local control socket through which `incidentlib token add|list|revoke --db` reaches the server that holds the store "+
			"(a Unix socket of mode 0600 in a directory only its owner may write; docs/editing.md): auto: the store's path with "+controlSocketSuffix+
			" (off, with a warning, where that path cannot be one: too long, or a directory others may write); a path; off: none"),
		db: sf.path,
	}
	f.checks = append(f.checks, func() error {
		v := *c.value
		switch {
		case v == "auto" || v == "off":
			return nil
		case v == "" || strings.HasSuffix(v, "/"):
			return fmt.Errorf("--control-socket must be auto, off or the path of a socket file, got %q", v)
		case len(v) > maxSocketPath:
			return fmt.Errorf("--control-socket: a socket's path is at most %d bytes, got %d: %q", maxSocketPath, len(v), v)
		}
		return nil
	})
	return c
}

// path returns the socket's path and whether it was named explicitly; ""
// when off.
func (c controlSocketFlag) path() (string, bool) {
	switch *c.value {
	case "off":
		return "", false
	case "auto":
		return *c.db + controlSocketSuffix, false
	}
	return *c.value, true
}

// checkPrivateDir returns why dir is no place for a control socket: it
// must be a directory owned by this user that no one else may write.
func checkPrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("the directory %s belongs to the user %d, not to this one (%d)", dir, uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("others may write the directory %s (mode %04o): chmod go-w it", dir, fi.Mode().Perm())
	}
	return nil
}

// checkControlSocket returns why the command must not trust the socket at
// path: it must be a socket owned by this user, of mode 0600 or
// stricter, in a directory checkPrivateDir accepts.
func checkControlSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s is not a socket", path)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("refused the control socket %s: it belongs to the user %d, not to this one (%d)", path, uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("refused the control socket %s: its mode %04o lets others in (want 0600)", path, fi.Mode().Perm())
	}
	if err := checkPrivateDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("refused the control socket %s: %v", path, err)
	}
	return nil
}

// controlTokens is what the control socket serves: the token writes of
// the one write side and the token list of the reads.
type controlTokens struct {
	Writes incidentlib.TokenIssuer
	Reads  incidentlib.TokenReader
}

// startControlSocket serves the token commands on the socket the flag
// names, until the returned stop. An explicitly named socket that cannot
// be served is an error; the default one is turned off with a warning.
// A stale socket (no server answers on it) is removed first.
func (c controlSocketFlag) start(tokens controlTokens, logger *slog.Logger) (stop func(), err error) {
	path, explicit := c.path()
	if path == "" {
		return func() {}, nil
	}
	ln, err := listenControl(path)
	if err != nil {
		if explicit {
			return nil, fmt.Errorf("--control-socket: %w", err)
		}
		logger.Warn("no control socket: token add --db will not reach this server (--control-socket)", "err", err.Error())
		return func() {}, nil
	}
	hs := &http.Server{Handler: controlHandler(tokens, logger), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(peerListener{ln, logger})
	}()
	logger.Info("control socket", "path", path)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
		os.Remove(path)
	}, nil
}

// listenControl makes the socket at path, mode 0600, after checking its
// directory and removing a stale socket.
func listenControl(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("the path %s is longer than a socket's %d bytes", path, maxSocketPath)
	}
	if err := checkPrivateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s is there and is not a socket", path)
		}
		if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
			conn.Close()
			return nil, fmt.Errorf("another server answers on %s", path)
		}
		if err := os.Remove(path); err != nil { // stale: its server is gone
			return nil, err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The directory admits no one else, so the moment before the chmod
	// lets no other user in; the peer check refuses them anyway.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // the stop removes it, after the last answer
	return ln, nil
}

// peerListener accepts only connections from this process's user.
type peerListener struct {
	net.Listener
	logger *slog.Logger
}

func (l peerListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := checkPeer(conn); err != nil {
			l.logger.Warn("control socket: refused a connection", "err", err.Error())
			conn.Close()
			continue
		}
		return conn, nil
	}
}

// The wire: JSON over HTTP on the socket.

type controlToken struct {
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	LastUsed time.Time `json:"lastUsed"`
	Revoked  time.Time `json:"revoked"`
}

type controlAdd struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	Expires time.Time `json:"expires"`
}

type controlAnswer struct {
	Secret string          `json:"secret,omitempty"`
	Token  *controlToken   `json:"token,omitempty"`
	Tokens []*controlToken `json:"tokens,omitempty"`
	Code   string          `json:"code,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func toControl(t *incidentlib.TokenInfo) *controlToken {
	if t == nil {
		return nil
	}
	return &controlToken{Name: t.Name, Role: t.Role.String(), Created: t.Created, Expires: t.Expires, LastUsed: t.LastUsed, Revoked: t.Revoked}
}

func fromControl(t *controlToken) *incidentlib.TokenInfo {
	if t == nil {
		return nil
	}
	role, _ := incidentlib.ParseRole(t.Role)
	return &incidentlib.TokenInfo{Name: t.Name, Role: role, Created: t.Created, Expires: t.Expires, LastUsed: t.LastUsed, Revoked: t.Revoked}
}

// controlHandler answers POST /tokens (add), GET /tokens (list) and
// POST /tokens/revoke. Each write is the bootstrap admin's, as the
// socket's peer is the server's own user.
func controlHandler(tokens controlTokens, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, a controlAnswer, err error) {
		if err != nil {
			a = controlAnswer{Code: incidentlib.ErrorCode(err), Error: incidentlib.ErrorMessage(err)}
			if a.Code == incidentlib.EINTERNAL {
				logger.Error("control socket", "err", err.Error())
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(incidentlib.HTTPStatus(a.Code))
		}
		_ = json.NewEncoder(w).Encode(a)
	}
	decode := func(r *http.Request, v any) error {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(v); err != nil {
			return incidentlib.Errorf(incidentlib.EINVALID, "the request is no JSON: %v", err)
		}
		return nil
	}
	ctxOf := func(r *http.Request) context.Context {
		return incidentlib.WithIdentity(r.Context(), incidentlib.BootstrapAdmin)
	}
	mux.HandleFunc("POST /tokens", func(w http.ResponseWriter, r *http.Request) {
		var in controlAdd
		if err := decode(r, &in); err != nil {
			answer(w, controlAnswer{}, err)
			return
		}
		role, err := incidentlib.ParseRole(in.Role)
		if err != nil {
			answer(w, controlAnswer{}, err)
			return
		}
		secret, info, err := tokens.Writes.CreateToken(ctxOf(r), in.Name, role, in.Expires)
		answer(w, controlAnswer{Secret: secret, Token: toControl(info)}, err)
	})
	mux.HandleFunc("GET /tokens", func(w http.ResponseWriter, r *http.Request) {
		infos, err := tokens.Reads.ListTokens(ctxOf(r))
		a := controlAnswer{Tokens: make([]*controlToken, len(infos))}
		for i, t := range infos {
			a.Tokens[i] = toControl(t)
		}
		answer(w, a, err)
	})
	mux.HandleFunc("POST /tokens/revoke", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Name string `json:"name"`
		}
		if err := decode(r, &in); err != nil {
			answer(w, controlAnswer{}, err)
			return
		}
		info, err := tokens.Writes.RevokeToken(ctxOf(r), in.Name)
		answer(w, controlAnswer{Token: toControl(info)}, err)
	})
	return mux
}

// tokenOps are the token commands' operations: a store opened from its
// file (*storage.DB) or a running server's, through its control socket
// (*controlClient).
type tokenOps interface {
	incidentlib.TokenIssuer
	ListTokens(ctx context.Context) ([]*incidentlib.TokenInfo, error)
}

// controlClient is the token command's side of the control socket.
type controlClient struct {
	client *http.Client
}

var _ tokenOps = (*controlClient)(nil)

// dialControl returns a client of the control socket at path, once the
// socket passes checkControlSocket.
func dialControl(path string) (*controlClient, error) {
	if err := checkControlSocket(path); err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns: 1, IdleConnTimeout: 10 * time.Second, ResponseHeaderTimeout: time.Minute,
	}
	return &controlClient{client: &http.Client{Transport: tr, Timeout: time.Minute}}, nil
}

func (c *controlClient) close() { c.client.CloseIdleConnections() }

func (c *controlClient) call(ctx context.Context, method, path string, in any) (*controlAnswer, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://control"+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the control socket: %w", err)
	}
	defer resp.Body.Close()
	var a controlAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&a); err != nil {
		return nil, fmt.Errorf("the control socket answered %s: %v", resp.Status, err)
	}
	if a.Code != "" {
		return nil, incidentlib.Errorf(a.Code, "%s", a.Error)
	}
	return &a, nil
}

func (c *controlClient) CreateToken(ctx context.Context, name string, role incidentlib.Role, expires time.Time) (string, *incidentlib.TokenInfo, error) {
	a, err := c.call(ctx, http.MethodPost, "/tokens", controlAdd{Name: name, Role: role.String(), Expires: expires})
	if err != nil {
		return "", nil, err
	}
	if a.Secret == "" || a.Token == nil {
		return "", nil, errors.New("the control socket answered no token")
	}
	return a.Secret, fromControl(a.Token), nil
}

func (c *controlClient) RevokeToken(ctx context.Context, name string) (*incidentlib.TokenInfo, error) {
	a, err := c.call(ctx, http.MethodPost, "/tokens/revoke", map[string]string{"name": name})
	if err != nil {
		return nil, err
	}
	return fromControl(a.Token), nil
}

func (c *controlClient) ListTokens(ctx context.Context) ([]*incidentlib.TokenInfo, error) {
	a, err := c.call(ctx, http.MethodGet, "/tokens", nil)
	if err != nil {
		return nil, err
	}
	out := make([]*incidentlib.TokenInfo, len(a.Tokens))
	for i, t := range a.Tokens {
		out[i] = fromControl(t)
	}
	return out, nil
}

// withControl runs fn on the tokens of the server that holds the store
// (locked, the error of opening it) through the control socket, or says
// what to do when there is none.
func withControl(locked error, ctl controlSocketFlag, fn func(tokenOps) error) error {
	path, _ := ctl.path()
	if path == "" {
		return fmt.Errorf("%w: a running server holds it; manage its tokens through it with --server URL --token ADMIN_TOKEN, or through its control socket (--control-socket, off here)", locked)
	}
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: a running server holds it and serves no control socket at %s; manage its tokens through it with --server URL --token ADMIN_TOKEN", locked, path)
	}
	c, err := dialControl(path)
	if err != nil {
		return err
	}
	defer c.close()
	return fn(c)
}
