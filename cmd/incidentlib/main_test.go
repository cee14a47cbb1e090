package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
)

// runCmd runs the program in-process and returns its output.
func runCmd(t *testing.T, env map[string]string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return env[k] }
	err := run(context.Background(), args, getenv, strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// syncBuffer is a bytes.Buffer safe for a goroutine writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeWithSeedsAndShutdown(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr, "--db", filepath.Join(dir, "il.db")},
			func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	}()
	waitHealthy(t, "http://"+addr, done)
	resp, err := http.Post("http://"+addr+"/graphql", "application/json",
		strings.NewReader(`{"query":"{ incidents { totalCount } incident(id: \"IL-0213\") { org } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"totalCount":44`) || !strings.Contains(string(body), `"org":"Roblox"`) {
		t.Fatalf("seeds not served: %s", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve ended with %v; %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
	// The store is closed cleanly: it opens again and passes check.
	out, _, err := runCmd(t, nil, "", "check", "--db", filepath.Join(dir, "il.db"))
	if err != nil || !strings.Contains(out, "check: ok") {
		t.Fatalf("check after shutdown: %v %s", err, out)
	}
}

func waitHealthy(t *testing.T, base string, done chan error) {
	t.Helper()
	waitReadyFor(t, base, done, 30*time.Second)
}

// waitReadyFor waits until the server at base is ready (/readyz 200).
func waitReadyFor(t *testing.T, base string, done chan error, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve ended early: %v", err)
		default:
		}
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not become ready", base)
}

func TestSeedNoneKeepsTaxonomyOnly(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--seed", "none"}, func(k string) string {
			return map[string]string{"INCIDENTLIB_ADDR": addr, "INCIDENTLIB_DB": filepath.Join(dir, "il.db")}[k]
		}, strings.NewReader(""), io.Discard, io.Discard)
	}()
	waitHealthy(t, "http://"+addr, done)
	resp, err := http.Post("http://"+addr+"/graphql", "application/json",
		strings.NewReader(`{"query":"{ incidents { totalCount } taxonomy(kind: SEVERITY) { slug } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"totalCount":0`) || !strings.Contains(string(body), `"slug":"unknown"`) {
		t.Fatalf("want no incidents and the taxonomy: %s", body)
	}
}

func TestNonsenseConfigurationIsRefused(t *testing.T) {
	testutil.Refuses(t, run, map[string]testutil.Refusal{
		"ZeroTimeout":     {Args: []string{"serve", "--read-timeout", "0s"}, Want: []string{"read-timeout"}},
		"NegativeTimeout": {Args: []string{"serve", "--open-timeout", "-1s"}, Want: []string{"open-timeout"}},
		"UnitlessEnv":     {Args: []string{"serve"}, Env: map[string]string{"INCIDENTLIB_WRITE_TIMEOUT": "30"}, Want: []string{"INCIDENTLIB_WRITE_TIMEOUT"}},
		"BadSeedMode":     {Args: []string{"serve", "--seed", "sometimes"}, Want: []string{"--seed"}},
		"NegativeCache":   {Args: []string{"serve", "--record-cache", "-5"}, Want: []string{"record-cache"}},
		"NoSearchTurns":   {Args: []string{"serve", "--search-concurrency", "0"}, Want: []string{"search-concurrency"}},
		"GenZeroCount":    {Args: []string{"gen", "--count", "0"}, Want: []string{"count"}},
	})
}

func TestImportExportCheckCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "il.db")
	corpus, _, err := runCmd(t, nil, "", "gen", "--count", "300", "--seed", "4", "--first-id", "1000")
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := runCmd(t, nil, "", "gen", "--count", "300", "--seed", "4", "--first-id", "1000")
	if corpus != again {
		t.Fatal("gen is not deterministic")
	}
	path := filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(path, []byte(corpus), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, nil, "", "import", "--db", db, path)
	if err != nil || !strings.Contains(out, "300 created") {
		t.Fatalf("import: %v %s", err, out)
	}
	first, _, err := runCmd(t, nil, "", "export", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	db2 := filepath.Join(dir, "il2.db")
	if _, _, err := runCmd(t, nil, first, "import", "--db", db2, "-"); err != nil {
		t.Fatal(err)
	}
	second, _, _ := runCmd(t, nil, "", "export", "--db", db2)
	if first != second {
		t.Fatal("export → import → export is not byte-identical")
	}

	t.Run("BadRecordNamesFileLineAndID", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(corpus), "\n")
		lines[7] = strings.Replace(lines[7], `"date":"`, `"date":"1999-02-31`+`","x_was":"`, 1)
		bad := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(bad, []byte(strings.Join(lines[:10], "\n")), 0o644)
		before, _, _ := runCmd(t, nil, "", "export", "--db", db2)
		_, stderr, err := runCmd(t, nil, "", "import", "--db", db2, bad)
		if err == nil {
			t.Fatal("a bad record was accepted")
		}
		if !strings.Contains(stderr, "bad.jsonl:8") || !strings.Contains(stderr, "IL-1007") || !strings.Contains(stderr, "date") {
			t.Fatalf("the error must name the file, line, id and field: %s", stderr)
		}
		after, _, _ := runCmd(t, nil, "", "export", "--db", db2)
		if before != after {
			t.Fatal("a failed import changed the store")
		}
	})
	t.Run("BrokenJSON", func(t *testing.T) {
		bad := filepath.Join(dir, "broken.json")
		os.WriteFile(bad, []byte("[{\"id\": \"IL-0001\",}]"), 0o644)
		_, stderr, err := runCmd(t, nil, "", "import", "--db", db2, bad)
		if err == nil || !strings.Contains(stderr, "broken.json") {
			t.Fatalf("%v %s", err, stderr)
		}
	})
	t.Run("CheckOK", func(t *testing.T) {
		out, _, err := runCmd(t, nil, "", "check", "--db", db2)
		if err != nil || !strings.Contains(out, "check: ok") {
			t.Fatalf("%v %s", err, out)
		}
	})
	t.Run("Compact", func(t *testing.T) {
		out, _, err := runCmd(t, nil, "", "compact", "--db", db2)
		if err != nil {
			t.Fatal(err)
		}
		after, _, _ := runCmd(t, nil, "", "export", "--db", db2)
		if after != first {
			t.Fatalf("compact changed the data: %s", out)
		}
		if out, _, err := runCmd(t, nil, "", "check", "--db", db2); err != nil {
			t.Fatalf("check after compact: %s", out)
		}
	})
	t.Run("UnknownCommand", func(t *testing.T) {
		_, _, err := runCmd(t, nil, "", "frobnicate")
		if err == nil {
			t.Fatal("accepted")
		}
	})
	_ = fmt.Sprint
}

// TestServeTakesTurns: serve's http.Server has TakeTurns' hook with
// --take-turns and none without, the default (what the hook does:
// server's TestKeepAliveConnectionsTakeTurns).
func TestServeTakesTurns(t *testing.T) {
	for _, turns := range []bool{true, false} {
		hs := httpServer(http.NotFoundHandler(), httpOptions{takeTurns: turns, logger: slog.Default()})
		if got := hs.ConnState != nil; got != turns {
			t.Errorf("take-turns %v: a ConnState hook is %v", turns, got)
		}
	}
}
