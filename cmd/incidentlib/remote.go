package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/mcpserver"
	"github.com/incidentlib/incidentlib/outbound"
)

// remoteFlags are the flags of the commands that talk to a running server
// (import --server, backup): the server, the admin token and a deadline.
type remoteFlags struct {
	server  *string
	token   *string
	timeout *time.Duration
}

func addRemoteFlags(f *flags, serverUsage string) remoteFlags {
	rf := remoteFlags{
		server:  addServerFlag(f, serverUsage, false),
		token:   f.str("token", "", "the server's admin token (prefer the environment variable: flags show in ps)"),
		timeout: f.duration("timeout", 10*time.Minute, false, "how long one request to the server may take"),
	}
	f.checks = append(f.checks, func() error {
		if *rf.server == "" {
			return nil
		}
		if *rf.token == "" {
			return fmt.Errorf("--server needs --token (or %s), the server's admin token", envName("token"))
		}
		return nil
	})
	return rf
}

// addServerFlag declares --server, the URL of a running library, for the
// commands that talk to one (remoteFlags, mcp), checked by the one rule
// (incidentlib.ValidHTTPURL) before the command's own checks; required
// refuses an empty one too.
func addServerFlag(f *flags, usage string, required bool) *string {
	server := f.str("server", "", usage)
	f.checks = append(f.checks, func() error {
		if *server == "" {
			if required {
				return errors.New("--server is required: the URL of a running library, such as http://127.0.0.1:8080")
			}
			return nil
		}
		if why := incidentlib.ValidHTTPURL(*server); why != "" {
			return fmt.Errorf("--server %s", why)
		}
		return nil
	})
	return server
}

func (rf remoteFlags) remote() bool { return *rf.server != "" }

// remote is a client of one running server: its GraphQL operations go
// through the MCP tools' GraphQL-over-HTTP client (mcpserver.GraphQLHTTP)
// over the pooled keep-alive outbound client, with the admin token.
type remote struct {
	base   string
	token  string
	client *outbound.Client
	gql    *mcpserver.GraphQLHTTP
}

// noResponseBound is the response bound of a remote command's requests:
// none to speak of (a backup is the whole store).
const noResponseBound = 1 << 50

// dial builds the client: the pooled outbound client, with the deadline of
// one request raised to --timeout (a big import or backup takes a while
// before its first byte) and no bound on the response size (a backup is
// the whole store).
func (rf remoteFlags) dial() (*remote, error) {
	c, err := outboundClient(*rf.timeout, noResponseBound, "incidentlib-cli/1")
	if err != nil {
		return nil, err
	}
	r := &remote{base: strings.TrimRight(*rf.server, "/"), token: *rf.token, client: c}
	r.gql = &mcpserver.GraphQLHTTP{
		URL:              r.base + "/graphql",
		Do:               c.Do,
		MaxResponseBytes: noResponseBound,
		Prepare: func(_ context.Context, req *http.Request) {
			req.Header.Set("Authorization", "Bearer "+r.token)
			req.Header.Set("Accept", "application/json")
			// The mutations this client sends may be repeated without
			// harm (an import of the same records changes nothing the
			// second time), so a lost connection may be retried.
			key := make([]byte, 16)
			_, _ = rand.Read(key)
			req.Header.Set("Idempotency-Key", hex.EncodeToString(key))
		},
	}
	return r, nil
}

// outboundClient is the pooled keep-alive client of a command that talks
// to a running server (the remote commands, mcp): the deadline of one
// request and of its response's header is timeout, a response is read up
// to maxResponse bytes, and its metrics go to a registry of its own.
func outboundClient(timeout time.Duration, maxResponse int64, userAgent string) (*outbound.Client, error) {
	cfg := outbound.DefaultConfig()
	cfg.RequestTimeout = timeout
	cfg.ResponseHeaderTimeout = timeout
	cfg.MaxResponseBytes = maxResponse
	cfg.UserAgent = userAgent
	return outbound.New(cfg, prometheus.NewRegistry())
}

func (r *remote) close() { r.client.Close() }

// get is a GET of path on the server with the admin token.
func (r *remote) get(ctx context.Context, path string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	return req, nil
}

// graphql sends one operation and decodes its data into out. GraphQL
// errors (a refused token, a read-only server) come back as an error
// naming the code.
func (r *remote) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	resp, b, err := r.gql.Send(ctx, query, vars)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("%s: reading the answer: %w", r.base, err)
		}
		return err
	}
	var res mcpserver.Response
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s answered %s, not GraphQL: %.200s", r.base, resp.Status, b)
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		err := fmt.Errorf("%s: %s: %s", r.base, e.Extensions.Code, e.Message)
		if resp.StatusCode == http.StatusRequestEntityTooLarge {
			err = fmt.Errorf("%w; send fewer records per request with --chunk N (each request is then all or nothing on its own)", err)
		}
		return err
	}
	return json.Unmarshal(res.Data, out)
}
