package outbound

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// 8. Validate refuses each nonsensical value and names the field and unit.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig is invalid: %v", err)
	}
	if err := (Config{}).Validate(); err == nil {
		t.Fatal("zero Config accepted")
	}
	cases := []struct {
		field string
		unit  string
		mut   func(*Config)
	}{
		{"MaxConnsPerHost", "connections", func(c *Config) { c.MaxConnsPerHost = -1 }},
		{"MaxIdleConnsPerHost", "connections", func(c *Config) { c.MaxIdleConnsPerHost = 0 }},
		{"MaxIdleConnsPerHost", "connections", func(c *Config) { c.MaxConnsPerHost = 8; c.MaxIdleConnsPerHost = 16 }},
		{"MaxIdleConns", "connections", func(c *Config) { c.MaxIdleConns = 0 }},
		{"MaxIdleConns", "connections", func(c *Config) { c.MaxIdleConns = 10 }},
		{"IdleConnTimeout", "duration", func(c *Config) { c.IdleConnTimeout = 0 }},
		{"DialTimeout", "duration", func(c *Config) { c.DialTimeout = -time.Second }},
		{"KeepAlive", "duration", func(c *Config) { c.KeepAlive = 0 }},
		{"TLSHandshakeTimeout", "duration", func(c *Config) { c.TLSHandshakeTimeout = 0 }},
		{"ResponseHeaderTimeout", "duration", func(c *Config) { c.ResponseHeaderTimeout = -1 }},
		{"ExpectContinueTimeout", "duration", func(c *Config) { c.ExpectContinueTimeout = 0 }},
		{"MaxResponseHeaderBytes", "bytes", func(c *Config) { c.MaxResponseHeaderBytes = 0 }},
		{"RequestTimeout", "duration", func(c *Config) { c.RequestTimeout = 0 }},
		{"MaxRetries", "retries", func(c *Config) { c.MaxRetries = -1 }},
		{"MaxRetries", "retries", func(c *Config) { c.MaxRetries = 1000 }},
		{"BackoffBase", "duration", func(c *Config) { c.BackoffBase = 0 }},
		{"BackoffCap", "duration", func(c *Config) { c.BackoffCap = -time.Millisecond }},
		{"BackoffCap", "BackoffBase", func(c *Config) { c.BackoffBase = time.Second; c.BackoffCap = time.Millisecond }},
		{"RetryBudgetRatio", "ratio", func(c *Config) { c.RetryBudgetRatio = 0 }},
		{"RetryBudgetRatio", "ratio", func(c *Config) { c.RetryBudgetRatio = 1.5 }},
		{"RetryBudgetRatio", "ratio", func(c *Config) { c.RetryBudgetRatio = math.NaN() }},
		{"RetryBudgetWindow", "duration", func(c *Config) { c.RetryBudgetWindow = 0 }},
		{"RetryBudgetMinPerSecond", "retries per second", func(c *Config) { c.RetryBudgetMinPerSecond = -1 }},
		{"BreakerWindow", "duration", func(c *Config) { c.BreakerWindow = 0 }},
		{"BreakerMinRequests", "requests", func(c *Config) { c.BreakerMinRequests = 0 }},
		{"BreakerFailureRatio", "ratio", func(c *Config) { c.BreakerFailureRatio = -0.5 }},
		{"BreakerFailureRatio", "ratio", func(c *Config) { c.BreakerFailureRatio = 1.01 }},
		{"BreakerOpenTimeout", "duration", func(c *Config) { c.BreakerOpenTimeout = 0 }},
		{"BreakerHalfOpenRequests", "requests", func(c *Config) { c.BreakerHalfOpenRequests = 0 }},
		{"MaxResponseBytes", "bytes", func(c *Config) { c.MaxResponseBytes = 0 }},
		{"MaxDrainBytes", "bytes", func(c *Config) { c.MaxDrainBytes = -1 }},
		{"DrainTimeout", "duration", func(c *Config) { c.DrainTimeout = 0 }},
		{"MaxHosts", "hosts", func(c *Config) { c.MaxHosts = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mut(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate accepted a bad %s", tc.field)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("Validate: %v; want a *ConfigError for %s", err, tc.field)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.field) || !strings.Contains(msg, tc.unit) {
				t.Errorf("message %q should name %s and %q", msg, tc.field, tc.unit)
			}
			if _, err := New(cfg, nil); err == nil {
				t.Errorf("New accepted a bad %s", tc.field)
			}
		})
	}
	// MaxConnsPerHost = 0 means "no limit" and lifts the idle<=max rule.
	cfg := DefaultConfig()
	cfg.MaxConnsPerHost = 0
	if err := cfg.Validate(); err != nil {
		t.Errorf("MaxConnsPerHost=0: %v", err)
	}
	// Several problems are all reported.
	cfg = DefaultConfig()
	cfg.DialTimeout, cfg.MaxHosts = 0, 0
	if err := cfg.Validate(); !strings.Contains(err.Error(), "DialTimeout") || !strings.Contains(err.Error(), "MaxHosts") {
		t.Errorf("want both fields reported, got %v", err)
	}
}

func TestFullJitter(t *testing.T) {
	base, cap := 50*time.Millisecond, 2*time.Second
	for retry := range 70 {
		ceil := cap
		if retry < 6 {
			ceil = base << retry
		}
		for range 200 {
			d := fullJitter(base, cap, retry)
			if d < 0 || d > ceil {
				t.Fatalf("retry %d: backoff %v outside [0, %v]", retry, d, ceil)
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 3600 ", time.Hour, true},
		{"99999999999999999999999", math.MaxInt64, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tc := range cases {
		d, ok := parseRetryAfter(tc.in, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, d, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryBudget(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := newRetryBudget(0.1, 10*time.Second, 0)
	for range 100 {
		b.onRequest(now)
	}
	granted := 0
	for range 50 {
		if b.tryRetry(now) {
			granted++
		}
	}
	if granted != 10 {
		t.Errorf("granted %d retries for 100 requests at ratio 0.1, want 10", granted)
	}
	// After the window slides past, the old requests no longer count.
	later := now.Add(11 * time.Second)
	if b.tryRetry(later) {
		t.Error("retry granted with no requests in the window and no minimum")
	}
	// The minimum allows retries even without traffic.
	b2 := newRetryBudget(0.1, 10*time.Second, 1)
	granted = 0
	for range 50 {
		if b2.tryRetry(now) {
			granted++
		}
	}
	if granted != 10 {
		t.Errorf("granted %d retries from a 1/s minimum over 10s, want 10", granted)
	}
}

func TestIdempotencyAndHostKey(t *testing.T) {
	for m, want := range map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "PUT": true, "DELETE": true, "POST": false, "PATCH": false} {
		req, _ := http.NewRequest(m, "http://x", nil)
		if got := isIdempotent(req); got != want {
			t.Errorf("isIdempotent(%s) = %v", m, got)
		}
	}
	req, _ := http.NewRequest("POST", "http://x", nil)
	req.Header.Set(IdempotencyKeyHeader, "k")
	if !isIdempotent(req) {
		t.Error("POST with Idempotency-Key should be idempotent")
	}
	for in, want := range map[string]string{
		"http://Example.org/a?b":  "http://example.org:80",
		"https://example.org":     "https://example.org:443",
		"http://127.0.0.1:8080/x": "http://127.0.0.1:8080",
		"http://[::1]:9/":         "http://[::1]:9",
	} {
		u, _ := url.Parse(in)
		if got := hostKey(u); got != want {
			t.Errorf("hostKey(%s) = %s, want %s", in, got, want)
		}
	}
}
