package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// npmTool is the absolute path of an npm package's command in
// e2e/node_modules/.bin, or fails the test as nodeAudit does.
func npmTool(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("node_modules", ".bin", name))
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("no e2e/node_modules/.bin/%s: run `npm ci` in e2e/ (as make test does)", name)
	}
	return p
}

// runNode runs a command (node and a script of e2e/, or a tool of
// npmTool) in dir ("" for e2e/) and returns its standard output; while
// it runs, write (if not nil) is called every 50ms, so that a client that
// has subscribed sees writes whenever its subscription started.
func runNode(t *testing.T, dir string, write func(i int), name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	stop := writeEvery(write)
	err := cmd.Run()
	stop()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// writeEvery calls write (if not nil) every 50ms, counting from 0, until
// stop is called; stop returns when the last call has.
func writeEvery(write func(i int)) (stop func()) {
	var done atomic.Bool
	writes := make(chan struct{})
	go func() {
		defer close(writes)
		for i := 0; write != nil && !done.Load(); i++ {
			write(i)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() {
		done.Store(true)
		<-writes
	}
}

// servedSchema writes GET /schema.graphql of the server at base, as it
// comes, to dir/schema.graphql and returns that path.
func servedSchema(t *testing.T, base, dir string) string {
	t.Helper()
	resp, err := http.Get(base + "/schema.graphql")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /schema.graphql: %d %v", resp.StatusCode, err)
	}
	p := filepath.Join(dir, "schema.graphql")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// copyFiles copies the files named to dir.
func copyFiles(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
