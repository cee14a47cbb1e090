package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
)

func TestEdgeFlagsNonsenseRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"a": "{ incidents { nope } }"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "il.db")
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"CacheSizeWithoutUnit":      {Args: []string{"serve", "--response-cache-size", "64"}, Want: []string{"unit"}},
		"CacheSizeNegative":         {Args: []string{"serve", "--response-cache-size", "-1MiB"}, Want: []string{"response-cache-size"}},
		"CacheSizeEnvWithoutUnit":   {Args: []string{"serve"}, Env: map[string]string{"INCIDENTLIB_RESPONSE_CACHE_SIZE": "100"}, Want: []string{"INCIDENTLIB_RESPONSE_CACHE_SIZE"}},
		"CacheControlEmpty":         {Args: []string{"serve", "--cache-control", ""}, Want: []string{"cache-control"}},
		"CacheControlMalformed":     {Args: []string{"serve", "--cache-control", "max age=5"}, Want: []string{"cache-control"}},
		"APQNegative":               {Args: []string{"serve", "--apq-cache-size", "-1"}, Want: []string{"apq-cache-size"}},
		"PprofNoPort":               {Args: []string{"serve", "--pprof-addr", "localhost"}, Want: []string{"pprof-addr"}},
		"TrustedMissing":            {Args: []string{"serve", "--trusted-documents", filepath.Join(dir, "none.json")}, Want: []string{"trusted-documents"}},
		"TrustedDocumentInvalid":    {Args: []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--trusted-documents", bad}, Want: []string{"does not validate"}},
		"ExecutorUnknown":           {Args: []string{"serve", "--executor", "turbo"}, Want: []string{"--executor must be fast or gqlgen"}},
		"TrustedDocumentsEnvAsFlag": {Args: []string{"serve"}, Env: map[string]string{"INCIDENTLIB_TRUSTED_DOCUMENTS": filepath.Join(dir, "none.json")}, Want: []string{"trusted-documents"}},
	})
}

func TestServeEdgeFlags(t *testing.T) {
	dir := t.TempDir()
	listed := `query Listed { incidents(first: 2) { nodes { id } } }`
	manifest, _ := json.Marshal(map[string]string{"listed-1": listed})
	docs := filepath.Join(dir, "trusted.json")
	if err := os.WriteFile(docs, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	addr, pprofAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr, "--db", filepath.Join(dir, "il.db"),
			"--pprof-addr", pprofAddr, "--cache-control", "public, max-age=5", "--response-cache-size", "1MiB",
			"--trusted-documents", docs},
			func(string) string { return "" }, strings.NewReader(""), io.Discard, &stderr)
	}()
	waitHealthy(t, "http://"+addr, done)
	get := func(u string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	ext := `{"persistedQuery":{"version":1,"sha256Hash":"listed-1"}}`
	resp, body := get("http://" + addr + "/graphql?extensions=" + url.QueryEscape(ext))
	if resp.StatusCode != 200 || !strings.Contains(body, `"nodes"`) {
		t.Fatalf("listed by id: %d %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=5" || resp.Header.Get("ETag") == "" {
		t.Errorf("Cache-Control %q ETag %q", cc, resp.Header.Get("ETag"))
	}
	resp, body = get("http://" + addr + "/graphql?query=" + url.QueryEscape(`{ __typename }`))
	if !strings.Contains(body, "FORBIDDEN") {
		t.Errorf("an unlisted document: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get("http://" + pprofAddr + "/debug/pprof/"); resp.StatusCode != 200 {
		t.Errorf("pprof: %d", resp.StatusCode)
	}
	if resp, _ := get("http://" + addr + "/debug/pprof/"); resp.StatusCode != 404 {
		t.Errorf("pprof on the public listener: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
	// One JSON line per request, with the cache outcome.
	var sawRequest bool
	for _, line := range strings.Split(stderr.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "request" && m["path"] == "/graphql" && m["cache"] == "miss" && m["request_id"] != nil {
			sawRequest = true
		}
	}
	if !sawRequest {
		t.Errorf("no request line in the log: %s", stderr.String())
	}
}
