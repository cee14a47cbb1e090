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
)

func TestLimitFlagsNonsenseRefused(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"BodyWithoutUnit":       {[]string{"serve", "--max-body", "1048576"}, nil, "max-body"},
		"BodyTooSmall":          {[]string{"serve", "--max-body", "10B"}, nil, "max-body"},
		"ZeroCost":              {[]string{"serve", "--max-cost", "0"}, nil, "max-cost"},
		"DepthTooSmall":         {[]string{"serve", "--max-depth", "1"}, nil, "max-depth"},
		"TokensTooFew":          {[]string{"serve", "--max-tokens", "5"}, nil, "max-tokens"},
		"ZeroBatch":             {[]string{"serve", "--max-batch", "0"}, nil, "max-batch"},
		"ZeroRequestTimeout":    {[]string{"serve", "--request-timeout", "0s"}, nil, "request-timeout"},
		"UnitlessTimeoutEnv":    {[]string{"serve"}, map[string]string{"INCIDENTLIB_REQUEST_TIMEOUT": "10"}, "INCIDENTLIB_REQUEST_TIMEOUT"},
		"NegativeRate":          {[]string{"serve", "--rate-limit", "-1"}, nil, "rate-limit"},
		"BurstBelowCost":        {[]string{"serve", "--rate-limit", "100", "--rate-burst", "50"}, nil, "rate-burst"},
		"MemoryLimitTooLow":     {[]string{"serve", "--memory-limit", "64MiB"}, nil, "memory-limit"},
		"MemoryLimitWithout":    {[]string{"serve"}, map[string]string{"INCIDENTLIB_MEMORY_LIMIT": "1073741824"}, "INCIDENTLIB_MEMORY_LIMIT"},
		"BadProxyHeader":        {[]string{"serve", "--trusted-proxy-header", "X Forwarded For"}, nil, "trusted-proxy-header"},
		"OriginWithPath":        {[]string{"serve", "--cors-origins", "https://example.org/app"}, nil, "cors-origins"},
		"OriginWithoutScheme":   {[]string{"serve", "--cors-origins", "https://ok.example.org,example.org"}, nil, "cors-origins"},
		"IntrospectionNotABool": {[]string{"serve", "--introspection=maybe"}, nil, "introspection"},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := runCmd(t, c.env, "", c.args...)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error()+stderr, c.want) {
				t.Fatalf("the error must name %s: %v %s", c.want, err, stderr)
			}
		})
	}
}

// TestServeWithLimits starts serve with limits from flags and the
// environment and sees them applied.
func TestServeWithLimits(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--prod", "--addr", addr, "--db", filepath.Join(dir, "il.db"),
			"--max-depth", "4", "--cors-origins", "https://app.example.org", "--rate-limit", "1000"},
			func(k string) string {
				return map[string]string{"INCIDENTLIB_MAX_COST": "500", "INCIDENTLIB_MAX_BODY": "4KiB"}[k]
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
