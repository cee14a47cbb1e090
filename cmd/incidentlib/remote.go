package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
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
		server:  f.str("server", "", serverUsage),
		token:   f.str("token", "", "the server's admin token (prefer the environment variable: flags show in ps)"),
		timeout: f.duration("timeout", 10*time.Minute, false, "how long one request to the server may take"),
	}
	f.checks = append(f.checks, func() error {
		if *rf.server == "" {
			return nil
		}
		if why := incidentlib.ValidHTTPURL(*rf.server); why != "" {
			return fmt.Errorf("--server %s", why)
		}
		if *rf.token == "" {
			return fmt.Errorf("--server needs --token (or %s), the server's admin token", envName("token"))
		}
		return nil
	})
	return rf
}

func (rf remoteFlags) remote() bool { return *rf.server != "" }

// remote is a client of one running server.
type remote struct {
	base   string
	token  string
	client *outbound.Client
}

// dial builds the client: the pooled outbound client, with the deadline of
// one request raised to --timeout (a big import or backup takes a while
// before its first byte) and no bound on the response size (a backup is
// the whole store).
func (rf remoteFlags) dial() (*remote, error) {
	cfg := outbound.DefaultConfig()
	cfg.RequestTimeout = *rf.timeout
	cfg.ResponseHeaderTimeout = *rf.timeout
	cfg.MaxResponseBytes = 1 << 50
	cfg.UserAgent = "incidentlib-cli/1"
	c, err := outbound.New(cfg, prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	return &remote{base: strings.TrimRight(*rf.server, "/"), token: *rf.token, client: c}, nil
}

func (r *remote) close() { r.client.Close() }

func (r *remote) request(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	return req, nil
}

// graphql sends one operation and decodes its data into out. GraphQL
// errors (a refused token, a read-only server) come back as an error
// naming the code.
func (r *remote) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := r.request(ctx, http.MethodPost, "/graphql", body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	// The mutations this client sends may be repeated without harm (an
	// import of the same records changes nothing the second time), so a
	// lost connection may be retried.
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req.Header.Set("Idempotency-Key", hex.EncodeToString(key))
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", r.base, err)
	}
	var res struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string         `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s answered %s, not GraphQL: %.200s", r.base, resp.Status, b)
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		err := fmt.Errorf("%s: %v: %s", r.base, e.Extensions["code"], e.Message)
		if resp.StatusCode == http.StatusRequestEntityTooLarge {
			err = fmt.Errorf("%w; send fewer records per request with --chunk N (each request is then all or nothing on its own)", err)
		}
		return err
	}
	return json.Unmarshal(res.Data, out)
}
