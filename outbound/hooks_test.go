package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// permanent is an error that says a new attempt would not change it.
type permanent struct{}

func (permanent) Error() string   { return "refused by policy" }
func (permanent) Permanent() bool { return true }

// The fields the link checker needs change nothing when left zero (the
// other tests), and do what they say when set.
func TestCallerHooks(t *testing.T) {
	t.Run("DialContextPermanentNotRetriedNorCounted", func(t *testing.T) {
		var dials atomic.Int64
		cfg := testConfig()
		cfg.BreakerMinRequests = 1
		cfg.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, permanent{}
		}
		c, _ := newTestClient(t, cfg)
		defer c.Close()
		for range 3 {
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
			_, err := c.Do(req)
			var p permanent
			if !errors.As(err, &p) || errors.Is(err, ErrCircuitOpen) {
				t.Fatalf("Do: %v, want the dialer's permanent error", err)
			}
		}
		if st := c.Stats(); dials.Load() != 3 || st.Retries != 0 || st.BreakerRejections != 0 {
			t.Fatalf("%d dials, %d retries, %d breaker rejections for 3 requests refused for good", dials.Load(), st.Retries, st.BreakerRejections)
		}
	})
	t.Run("NoRedirects", func(t *testing.T) {
		srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "http://[::1") // not even parsed
			w.WriteHeader(http.StatusFound)
		})
		defer srv.Close()
		cfg := testConfig()
		cfg.NoRedirects = true
		c, _ := newTestClient(t, cfg)
		defer c.Close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || srv.hits.Load() != 1 {
			t.Fatalf("status %d after %d requests, want the 302 itself", resp.StatusCode, srv.hits.Load())
		}
	})
	t.Run("RetryOn408", func(t *testing.T) {
		for _, on := range []bool{false, true} {
			srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusRequestTimeout)
			})
			cfg := testConfig()
			cfg.RetryOn408 = on
			c, _ := newTestClient(t, cfg)
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := int64(1)
			if on {
				want = int64(1 + cfg.MaxRetries)
			}
			if resp.StatusCode != http.StatusRequestTimeout || srv.hits.Load() != want {
				t.Fatalf("RetryOn408 %v: %d attempts, want %d", on, srv.hits.Load(), want)
			}
			c.Close()
			srv.Close()
		}
	})
}
