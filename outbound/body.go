package outbound

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// handOut prepares a response for the caller: its body is bounded by
// MaxResponseBytes and its Close drains, closes and releases the attempt
// context. A nil resp releases the context at once.
func (c *Client) handOut(resp *http.Response, cancel context.CancelFunc) *http.Response {
	if resp == nil {
		cancel()
		return nil
	}
	resp.Body = &body{
		rc:        resp.Body,
		remaining: c.cfg.MaxResponseBytes,
		cfg:       &c.cfg,
		cancel:    cancel,
	}
	return resp
}

// discard drains (bounded) and closes the body of a response that is not
// handed out; the caller releases the attempt context afterwards.
func (c *Client) discard(resp *http.Response, cancel context.CancelFunc) {
	drain(resp.Body, &c.cfg, cancel)
	_ = resp.Body.Close()
}

// drain reads and discards at most cfg.MaxDrainBytes of rc, for at most
// cfg.DrainTimeout: when the time is up, cancel (the attempt context) aborts
// the read and the connection is closed instead of reused.
func drain(rc io.Reader, cfg *Config, cancel context.CancelFunc) {
	t := time.AfterFunc(cfg.DrainTimeout, cancel)
	_, _ = io.CopyN(io.Discard, rc, cfg.MaxDrainBytes)
	t.Stop()
}

// body is the response body handed to callers of Do.
type body struct {
	rc        io.ReadCloser
	remaining int64 // bytes the caller may still read
	cfg       *Config
	cancel    context.CancelFunc
	once      sync.Once
	tooLarge  bool
}

// Read reads from the body; past MaxResponseBytes it fails with
// ErrResponseTooLarge.
func (b *body) Read(p []byte) (int, error) {
	if b.tooLarge {
		return 0, ErrResponseTooLarge
	}
	if b.remaining <= 0 {
		// At the limit: only EOF is acceptable now.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.tooLarge = true
			return 0, ErrResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.rc.Read(p)
	b.remaining -= int64(n)
	return n, err
}

// Close drains at most MaxDrainBytes for at most DrainTimeout (so the
// connection can go back to the pool), closes the body and releases the
// attempt's context.
func (b *body) Close() error {
	var err error
	b.once.Do(func() {
		if !b.tooLarge {
			drain(b.rc, b.cfg, b.cancel)
		}
		err = b.rc.Close()
		b.cancel()
	})
	return err
}

// Get sends a GET and returns the whole body (at most MaxResponseBytes), the
// status code and the headers. A non-2xx status is not an error here; the
// body is always read to the end and closed.
func (c *Client) Get(ctx context.Context, url string) ([]byte, int, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("outbound: building GET %q: %w", url, err)
	}
	return c.getBody(req)
}

func (c *Client) getBody(req *http.Request) ([]byte, int, http.Header, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, resp.Header, fmt.Errorf("outbound: %s %s: reading body: %w",
			req.Method, hostKey(req.URL), err)
	}
	return b, resp.StatusCode, resp.Header, nil
}

// GetJSON sends a GET with "Accept: application/json" and decodes a 2xx
// response body (at most MaxResponseBytes) into v. A non-2xx response yields
// a *StatusError.
func (c *Client) GetJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("outbound: building GET %q: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	b, code, _, err := c.getBody(req)
	if err != nil {
		return err
	}
	if code < 200 || code > 299 {
		return &StatusError{Host: hostKey(req.URL), StatusCode: code, Body: b[:min(len(b), 512)]}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("outbound: GET %s: decoding JSON: %w", hostKey(req.URL), err)
	}
	return nil
}
