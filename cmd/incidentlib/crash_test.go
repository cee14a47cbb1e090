package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/storage"
)

const crashToken = "crash-test-admin-token-0123456789"

// buildBinary builds the real program into a temp dir (without the race
// detector: the test is about the process, and builds faster so).
func buildBinary(t *testing.T) string { return testutil.BuildBinary(t, ".") }

// proc is the real binary serving a store.
type proc struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
}

// startServe starts `incidentlib serve` on a free port and waits until it
// answers.
func startServe(t *testing.T, bin, db string, extra ...string) *proc {
	t.Helper()
	return startServeUnder(t, nil, bin, db, extra...)
}

// startServeUnder is startServe with the binary run by the command in
// wrapper (such as prlimit with its flags), if any.
func startServeUnder(t *testing.T, wrapper []string, bin, db string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--seed", "none", "--log-level", "warn"}, extra...)
	argv := append(append(append([]string(nil), wrapper...), bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"INCIDENTLIB_ADMIN_TOKEN=" + crashToken}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "incidentlib serving on "); ok {
				lines <- rest
			}
		}
		close(lines)
	}()
	select {
	case base, ok := <-lines:
		if !ok {
			t.Fatalf("serve ended before serving: %s", p.stderr.String())
		}
		p.base = base
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start: %s", p.stderr.String())
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		resp, err := http.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("serve did not become ready: %s", p.stderr.String())
	return nil
}

// kill ends the process with SIGKILL: no shutdown, no close, no last sync.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// runBin runs the binary to the end and returns its output and exit code.
func runBin(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

const crashUpsert = `mutation($input: IncidentInput!) {
  upsertIncident(input: $input) { incident { title(lang: EN) } userErrors { code } }
}`

// upsertTitle writes incident id with the given title and reports whether
// the server acknowledged it.
func upsertTitle(ctx context.Context, c *http.Client, base, id, title string) bool {
	body, _ := json.Marshal(map[string]any{"query": crashUpsert, "variables": map[string]any{"input": map[string]any{
		"id": id, "org": "Crash Test", "orgSlug": "crash-test", "title": map[string]any{"en": title},
		"domain": []string{"database"},
	}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+crashToken)
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			UpsertIncident *struct {
				Incident   *struct{ Title string }
				UserErrors []struct{ Code string }
			} `json:"upsertIncident"`
		}
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return false
	}
	u := out.Data.UpsertIncident
	return u != nil && len(u.UserErrors) == 0 && u.Incident != nil && u.Incident.Title == title
}

// versionOf reads the version out of a title "crash v17".
func versionOf(title string) int {
	v, err := strconv.Atoi(strings.TrimPrefix(title, "crash v"))
	if err != nil {
		return -1
	}
	return v
}

// TestRealBinary builds the program once and runs it as separate
// processes.
func TestRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildBinary(t)
	t.Run("SecondProcessIsRefused", func(t *testing.T) { testSecondProcessIsRefused(t, bin) })
	t.Run("CrashKeepsAcknowledgedWrites", func(t *testing.T) { testCrashKeepsAcknowledgedWrites(t, bin) })
	t.Run("KilledImportIsReported", func(t *testing.T) { testKilledImportIsReported(t, bin) })
}

// testCrashKeepsAcknowledgedWrites starts the real binary, sends
// concurrent upserts, kills it with SIGKILL at a random moment, and does it
// again over several cycles: every acknowledged write must be there after
// the restart, and `incidentlib check` must pass after every kill.
func testCrashKeepsAcknowledgedWrites(t *testing.T, bin string) {
	db := filepath.Join(t.TempDir(), "crash.db")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	const writers, idsPerWriter, cycles = 8, 10, 5
	// Each writer owns its ids and writes them in turn with growing
	// versions, so for every id: acknowledged <= stored <= attempted.
	var mu sync.Mutex
	acked := map[string]int{}
	attempted := map[string]int{}
	version := make([]int, writers)
	client := &http.Client{Timeout: 10 * time.Second}
	total := 0

	check := func(stored map[string]int, when string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for id, v := range acked {
			if stored[id] < v {
				t.Fatalf("%s: %s holds version %d, but version %d was acknowledged", when, id, stored[id], v)
			}
			if stored[id] > attempted[id] {
				t.Fatalf("%s: %s holds version %d, never written", when, id, stored[id])
			}
		}
	}
	for cycle := range cycles {
		p := startServe(t, bin, db)
		// Read every acknowledged write back through the restarted server.
		stored := map[string]int{}
		for w := range writers {
			var ids []string
			for k := range idsPerWriter {
				ids = append(ids, incidentlib.FormatID(uint32(1000+w*100+k)))
			}
			body, _ := json.Marshal(map[string]any{"query": `query($ids: [ID!]) { incidents(first: 100, filter: {ids: $ids}) { nodes { id title(lang: EN) } } }`,
				"variables": map[string]any{"ids": ids}})
			resp, err := client.Post(p.base+"/graphql", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Data struct {
					Incidents struct{ Nodes []struct{ ID, Title string } }
				}
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range out.Data.Incidents.Nodes {
				stored[n.ID] = versionOf(n.Title)
			}
		}
		check(stored, fmt.Sprintf("cycle %d, after restart", cycle))

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for ctx.Err() == nil {
					mu.Lock()
					version[w]++
					v := version[w]
					id := incidentlib.FormatID(uint32(1000 + w*100 + v%idsPerWriter))
					attempted[id] = v
					mu.Unlock()
					if upsertTitle(ctx, client, p.base, id, fmt.Sprintf("crash v%d", v)) {
						mu.Lock()
						acked[id] = v
						total++
						mu.Unlock()
					}
				}
			})
		}
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		p.kill(t)
		cancel()
		wg.Wait()

		if out, errOut, code := runBin(t, bin, "check", "--db", db); code != 0 {
			t.Fatalf("cycle %d: check after SIGKILL exited %d:\n%s%s", cycle, code, out, errOut)
		}
	}
	out, errOut, code := runBin(t, bin, "export", "--db", db)
	if code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	stored := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var inc incidentlib.Incident
		if err := json.Unmarshal([]byte(line), &inc); err != nil {
			t.Fatal(err)
		}
		stored[inc.ID] = versionOf(inc.Title.En)
	}
	check(stored, "after the last kill")
	if total == 0 {
		t.Fatal("no write was acknowledged")
	}
	t.Logf("%d writes acknowledged over %d kills", total, cycles)
}

// testSecondProcessIsRefused: while a server holds the store, another
// process opening it fails once its --open-timeout is over, saying the
// file is locked.
func testSecondProcessIsRefused(t *testing.T, bin string) {
	db := filepath.Join(t.TempDir(), "locked.db")
	p := startServe(t, bin, db)
	for _, args := range [][]string{
		{"check", "--db", db, "--open-timeout", "200ms"},
		{"export", "--db", db, "--open-timeout", "200ms"},
		{"serve", "--db", db, "--addr", "127.0.0.1:0", "--open-timeout", "200ms"},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, errOut, code := runBin(t, bin, args...)
			if code == 0 || !strings.Contains(errOut, storage.ErrLocked.Error()) {
				t.Fatalf("exit %d, stderr %q: want a failure naming %q", code, errOut, storage.ErrLocked)
			}
		})
	}
	// The server was not disturbed.
	resp, err := http.Get(p.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	p.kill(t)
	if _, err := os.Stat(db); err != nil {
		t.Fatal(err)
	}
}
