package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func init() {
	register("cluster-kill", "three `incidentlib serve` cluster processes on loopback: the time from a SIGKILL of the stream's leader to the next acknowledged write, over several rounds", runClusterKill)
}

// killNode is one serve process of the cluster-kill benchmark.
type killNode struct {
	name, db, listen, base string
	cmd                    *exec.Cmd
	lines                  chan string // the address it serves on, once
}

const killToken = "il_cluster-kill-benchmark-admin-token"

// runClusterKill builds the binary, runs three cluster nodes as separate
// processes, and in each round SIGKILLs the node that leads the stream
// while writers write through the two others, and reports the time to
// the first write acknowledged after the kill; the killed node is
// started again (and waited for) before the next round.
func runClusterKill(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flagSet("cluster-kill", stdout)
	rounds := fs.Int("rounds", 5, "SIGKILLs of the leader, each after the killed node came back")
	dirFlag := fs.String("db", "", "directory for the binary and the stores (default: a temporary directory, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atLeast("rounds", *rounds, 1); err != nil {
		return err
	}
	dir, done, err := workDir(*dirFlag, "cluster-kill")
	if err != nil {
		return err
	}
	defer done()
	bin := filepath.Join(dir, "incidentlib")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/incidentlib")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the binary (run from the repository's root): %w", err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("the-cluster-kill-benchmark-secret\n"), 0o600); err != nil {
		return err
	}
	var nodes []*killNode
	var peers []string
	for i := range 3 {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		nodes = append(nodes, &killNode{name: fmt.Sprintf("k%d", i+1), db: filepath.Join(dir, fmt.Sprintf("k%d.db", i+1)), listen: addr})
		peers = append(peers, addr)
	}
	start := func(n *killNode) error {
		n.cmd = exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--db", n.db, "--seed", "none", "--log-level", "error",
			"--cluster-name", "kill", "--node-name", n.name, "--cluster-listen", n.listen, "--cluster-peers", strings.Join(peers, ","),
			"--cluster-secret-file", secret, "--cluster-write-timeout", "2s", "--response-cache-size", "0")
		n.cmd.Env = append(os.Environ(), "INCIDENTLIB_ADMIN_TOKEN="+killToken)
		out, err := n.cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := n.cmd.Start(); err != nil {
			return err
		}
		n.lines = make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if rest, ok := strings.CutPrefix(sc.Text(), "incidentlib serving on "); ok {
					n.lines <- rest
				}
			}
			close(n.lines)
		}()
		return nil
	}
	defer func() {
		for _, n := range nodes {
			if n.cmd != nil && n.cmd.ProcessState == nil {
				_ = n.cmd.Process.Kill()
				_ = n.cmd.Wait()
			}
		}
	}()
	for _, n := range nodes {
		if err := start(n); err != nil {
			return err
		}
	}
	// ready waits for node n's address (a new node serves once it reached
	// its peers, so the three are started first) and its /readyz.
	ready := func(n *killNode) error {
		select {
		case base, ok := <-n.lines:
			if !ok {
				return fmt.Errorf("%s ended before serving", n.name)
			}
			n.base = base
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("%s did not start serving", n.name)
		}
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if resp, err := http.Get(n.base + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		return fmt.Errorf("%s did not become ready", n.name)
	}
	for _, n := range nodes {
		if err := ready(n); err != nil {
			return err
		}
	}
	loadavg, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(stdout, "cluster-kill: %d rounds, load average %s", *rounds, loadavg)
	var figures []time.Duration
	for round := 1; round <= *rounds; round++ {
		leader, err := killLeader(nodes)
		if err != nil {
			return err
		}
		var others []*killNode
		for _, n := range nodes {
			if n != leader {
				others = append(others, n)
			}
		}
		// Writers through the two others, before and after the kill.
		wctx, cancel := context.WithCancel(ctx)
		var killedAt atomic.Int64
		first := make(chan time.Time, 1)
		for w := range 4 {
			go func() {
				hc := &http.Client{Timeout: 5 * time.Second}
				for v := 0; wctx.Err() == nil; v++ {
					n := others[(w+v)%2]
					at := killedAt.Load()
					if killWrite(wctx, hc, n.base, fmt.Sprintf("IL-%04d", 8000+w), fmt.Sprintf("round %d write %d", round, v)) && at != 0 {
						select {
						case first <- time.Now():
						default:
						}
					}
				}
			}()
		}
		time.Sleep(time.Second)
		killedAt.Store(time.Now().UnixNano())
		_ = leader.cmd.Process.Signal(syscall.SIGKILL)
		_ = leader.cmd.Wait()
		var took time.Duration
		select {
		case t := <-first:
			took = t.Sub(time.Unix(0, killedAt.Load()))
		case <-time.After(2 * time.Minute):
			cancel()
			return fmt.Errorf("round %d: no write was acknowledged within 2 minutes of the kill of %s", round, leader.name)
		}
		cancel()
		figures = append(figures, took)
		fmt.Fprintf(stdout, "round %d: SIGKILL of the leader %s, the next acknowledged write %s after it\n", round, leader.name, took.Round(time.Millisecond))
		if err := start(leader); err != nil {
			return err
		}
		if err := ready(leader); err != nil {
			return err
		}
	}
	slices.Sort(figures)
	fmt.Fprintf(stdout, "cluster-kill: failover after a SIGKILL of the leader: median %s, min %s, max %s\n",
		figures[len(figures)/2].Round(time.Millisecond), figures[0].Round(time.Millisecond), figures[len(figures)-1].Round(time.Millisecond))
	return nil
}

var killLeaderRe = regexp.MustCompile(`(?m)^incidentlib_cluster_stream_leader (\S+)$`)

// killLeader returns the node whose /metrics says it leads the stream.
func killLeader(nodes []*killNode) (*killNode, error) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, n := range nodes {
			resp, err := http.Get(n.base + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := killLeaderRe.FindSubmatch(b); m != nil && string(m[1]) == "1" {
				return n, nil
			}
		}
	}
	return nil, errors.New("no node leads the stream")
}

// killWrite upserts incident id with title through base and reports
// whether the write was acknowledged.
func killWrite(ctx context.Context, hc *http.Client, base, id, title string) bool {
	if err := postUpsert(ctx, hc, base, killToken, id, title); err != nil {
		time.Sleep(50 * time.Millisecond)
		return false
	}
	return true
}

// postUpsert upserts incident id with title through the GraphQL endpoint
// at base with token, and returns why the write was not acknowledged.
func postUpsert(ctx context.Context, hc *http.Client, base, token, id, title string) error {
	body, _ := json.Marshal(map[string]any{"query": `mutation($input: IncidentInput!) { upsertIncident(input: $input) { incident { id } } }`,
		"variables": map[string]any{"input": map[string]any{"id": id, "org": "Kill Bench", "orgSlug": "kill-bench", "title": map[string]any{"en": title}, "domain": []string{"database"}}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			UpsertIncident *struct{ Incident *struct{ ID string } }
		}
		Errors []json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("upsert of %s: HTTP %d, %w", id, resp.StatusCode, err)
	}
	if len(out.Errors) > 0 || out.Data.UpsertIncident == nil || out.Data.UpsertIncident.Incident == nil {
		return fmt.Errorf("upsert of %s: HTTP %d, errors %s", id, resp.StatusCode, out.Errors)
	}
	return nil
}
