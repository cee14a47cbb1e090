package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib/internal/testutil"
)

func TestLimitFlagsNonsenseRefused(t *testing.T) {
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"BodyWithoutUnit":       {Args: []string{"serve", "--max-body", "1048576"}, Want: []string{"max-body"}},
		"BodyTooSmall":          {Args: []string{"serve", "--max-body", "10B"}, Want: []string{"max-body"}},
		"ZeroCost":              {Args: []string{"serve", "--max-cost", "0"}, Want: []string{"max-cost"}},
		"DepthTooSmall":         {Args: []string{"serve", "--max-depth", "1"}, Want: []string{"max-depth"}},
		"TokensTooFew":          {Args: []string{"serve", "--max-tokens", "5"}, Want: []string{"max-tokens"}},
		"ZeroBatch":             {Args: []string{"serve", "--max-batch", "0"}, Want: []string{"max-batch"}},
		"ZeroRequestTimeout":    {Args: []string{"serve", "--request-timeout", "0s"}, Want: []string{"request-timeout"}},
		"UnitlessTimeoutEnv":    {Args: []string{"serve"}, Env: map[string]string{"INCIDENTLIB_REQUEST_TIMEOUT": "10"}, Want: []string{"INCIDENTLIB_REQUEST_TIMEOUT"}},
		"NegativeRate":          {Args: []string{"serve", "--rate-limit", "-1"}, Want: []string{"rate-limit"}},
		"BurstBelowCost":        {Args: []string{"serve", "--rate-limit", "100", "--rate-burst", "50"}, Want: []string{"rate-burst"}},
		"MemoryLimitTooLow":     {Args: []string{"serve", "--memory-limit", "64MiB"}, Want: []string{"memory-limit"}},
		"MemoryLimitWithout":    {Args: []string{"serve"}, Env: map[string]string{"INCIDENTLIB_MEMORY_LIMIT": "1073741824"}, Want: []string{"INCIDENTLIB_MEMORY_LIMIT"}},
		"BadProxyHeader":        {Args: []string{"serve", "--trusted-proxy-header", "X Forwarded For"}, Want: []string{"trusted-proxy-header"}},
		"OriginWithPath":        {Args: []string{"serve", "--cors-origins", "https://example.org/app"}, Want: []string{"cors-origins"}},
		"OriginWithoutScheme":   {Args: []string{"serve", "--cors-origins", "https://ok.example.org,example.org"}, Want: []string{"cors-origins"}},
		"IntrospectionNotABool": {Args: []string{"serve", "--introspection=maybe"}, Want: []string{"introspection"}},
	})
}

// TestServeWithLimits starts serve with limits from flags and the
// environment and sees them applied.
func TestServeWithLimits(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--prod", "--addr", addr, "--db", filepath.Join(dir, "il.db"),
			"--max-depth", "4", "--cors-origins", "https://app.example.org", "--rate-limit", "1000",
			"--seed", "none"}, // the seeds are larger than the 2KiB --max-record this body limit needs
			func(k string) string {
				return map[string]string{"INCIDENTLIB_MAX_COST": "500", "INCIDENTLIB_MAX_BODY": "4KiB", "INCIDENTLIB_MAX_RECORD": "2KiB"}[k]
			}, strings.NewReader(""), io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		<-done
	}()
	base := "http://" + addr
	waitHealthy(t, base, done)
	post := func(body string) (int, string, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://app.example.org")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Errors []struct {
				Extensions map[string]any
			}
			Extensions map[string]any
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &out)
		code := ""
		if len(out.Errors) > 0 {
			code, _ = out.Errors[0].Extensions["code"].(string)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.org" {
			t.Errorf("no CORS header for the allowed origin: %v", resp.Header)
		}
		return resp.StatusCode, code, out.Extensions
	}
	q := func(s string) string { b, _ := json.Marshal(map[string]string{"query": s}); return string(b) }
	if status, code, ext := post(q(`{ incident(id: "IL-0213") { id } }`)); status != 200 || code != "" || ext["cost"] == nil {
		t.Fatalf("a small query: %d %s %v", status, code, ext)
	}
	if _, code, _ := post(q(`{ incident(id: "IL-0213") { related { related { related { id } } } } }`)); code != "DEPTH_LIMIT" {
		t.Fatalf("--max-depth 4: %s", code)
	}
	if _, code, _ := post(q(`{ incidents(first: 100) { nodes { id title date org orgSlug } } }`)); code != "COST_LIMIT" {
		t.Fatalf("INCIDENTLIB_MAX_COST=500: %s", code)
	}
	if status, code, _ := post(`{"query": "` + strings.Repeat(" ", 5000) + `{ __typename }"}`); status != 413 || code != "BODY_TOO_LARGE" {
		t.Fatalf("INCIDENTLIB_MAX_BODY=4KiB: %d %s", status, code)
	}
	resp, err := http.Get(base + "/schema.graphql")
	if err != nil {
		t.Fatal(err)
	}
	sdl, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(sdl), "type Query") {
		t.Fatalf("the schema in prod mode: %d", resp.StatusCode)
	}
	// With application/graphql-response+json a refusal is 400 (200 with
	// application/json, the answer without Accept).
	ireq, _ := http.NewRequest(http.MethodGet, base+"/graphql?"+url.Values{"query": {`{ __schema { queryType { name } } }`}}.Encode(), nil)
	ireq.Header.Set("Accept", "application/graphql-response+json")
	r, err := http.DefaultClient.Do(ireq)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 {
		t.Fatalf("introspection in prod mode: %d", r.StatusCode)
	}
}
