//go:build clustertest

// The cluster's faults as they happen, on three real processes: SIGKILL
// during a burst of writes, SIGSTOP, and a node cut off from its peers by
// loopback proxies the test stops. `make test-cluster` runs it (without
// the race detector: elections make it slow).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// linkProxy forwards one node's route connections to a peer's route
// listener; blocked, it closes them and refuses new ones: the link is cut.
type linkProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]bool
}

func newLinkProxy(t *testing.T, target string) *linkProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.block(true) })
	go p.serve()
	return p
}

func (p *linkProxy) addr() string { return p.ln.Addr().String() }

func (p *linkProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.blocked {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// block cuts (true) or restores (false) the link.
func (p *linkProxy) block(b bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = b
	if b {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]bool{}
	}
}

// clusterNode is one `incidentlib serve` process of the cluster.
type clusterNode struct {
	name, db, listen string
	peers            []string
	logLevel         string // other than warn
	cmd              *exec.Cmd
	lines            chan string
	base             string
	stderr           *syncBuffer
}

type procCluster struct {
	t      *testing.T
	bin    string
	secret string
	nodes  []*clusterNode
	links  [][]*linkProxy // links[i][j]: node i's routes to node j
}

func newProcCluster(t *testing.T, bin string) *procCluster {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("the-process-cluster-shared-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &procCluster{t: t, bin: bin, secret: secret}
	for i := range 3 {
		c.nodes = append(c.nodes, &clusterNode{name: fmt.Sprintf("n%d", i+1), db: filepath.Join(dir, fmt.Sprintf("n%d.db", i+1)), listen: testutil.FreeAddr(t)})
	}
	// Each pair of nodes has one link, dialed by the later node (n2 dials
	// n1, n3 dials n1 and n2): one route per pair, through its proxy.
	c.links = make([][]*linkProxy, 3)
	for i := range 3 {
		c.links[i] = make([]*linkProxy, 3)
		for j := range i {
			c.links[i][j] = newLinkProxy(t, c.nodes[j].listen)
			c.nodes[i].peers = append(c.nodes[i].peers, c.links[i][j].addr())
		}
	}
	for _, n := range c.nodes {
		c.start(n)
	}
	for _, n := range c.nodes {
		c.serving(n)
		c.waitReady(n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.cmd != nil && n.cmd.ProcessState == nil {
				_ = n.cmd.Process.Signal(syscall.SIGCONT)
				_ = n.cmd.Process.Kill()
				_ = n.cmd.Wait()
			}
			// A node that panicked, died of a fatal error or (built with
			// INCIDENTLIB_TEST_RACE=1) raced fails the test, even where
			// the others carried on without it.
			if log := n.stderr.String(); deathRe.MatchString(log) {
				t.Errorf("%s died:\n%s", n.name, tail(log, 16<<10))
			}
		}
	})
	return c
}

// start runs node n: every route goes through the link proxies, and the
// node advertises no address of its own, so that no route bypasses them.
func (c *procCluster) start(n *clusterNode) {
	t := c.t
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", n.db, "--seed", "none", "--log-level", "warn",
		"--cluster-name", "proc", "--node-name", n.name, "--cluster-listen", n.listen, "--cluster-advertise", "127.0.0.1:1",
		// Itself too: n1 lists only itself.
		"--cluster-peers", strings.Join(append([]string{n.listen}, n.peers...), ","), "--cluster-secret-file", c.secret,
		"--cluster-write-timeout", "3s", "--cluster-start-timeout", "60s", "--response-cache-size", "0",
		// The leader stores a snapshot every 2 seconds (a wiped node
		// starts from one).
		"--cluster-snapshot-interval", "2s"}
	if n.logLevel != "" {
		args = append(args, "--log-level", n.logLevel)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Env = []string{"INCIDENTLIB_ADMIN_TOKEN=" + crashToken}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	n.stderr = &syncBuffer{}
	cmd.Stderr = n.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.cmd = cmd
	n.lines = make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "incidentlib serving on "); ok {
				n.lines <- rest
			}
		}
		close(n.lines)
	}()
}

// serving waits for node n's HTTP address: a new node serves once it
// reached its peers (and looked for a snapshot), so the nodes are started
// together first.
func (c *procCluster) serving(n *clusterNode) {
	t := c.t
	select {
	case base, ok := <-n.lines:
		if !ok {
			_ = n.cmd.Wait()
			t.Fatalf("%s ended before serving: %s", n.name, n.stderr.String())
		}
		n.base = base
	case <-time.After(120 * time.Second):
		t.Fatalf("%s did not start: %s", n.name, n.stderr.String())
	}
}

func (c *procCluster) waitReady(n *clusterNode) {
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
		resp, err := http.Get(n.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("%s did not become ready: %s", n.name, n.stderr.String())
}

func (c *procCluster) kill(n *clusterNode) {
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
}

var leaderRe = regexp.MustCompile(`(?m)^incidentlib_cluster_stream_leader (\S+)$`)

// leader returns the node that leads the stream.
func (c *procCluster) leader() *clusterNode {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, n := range c.nodes {
			if v, _ := metric(n.base, leaderRe); v == 1 {
				return n
			}
		}
	}
	c.t.Fatal("no node leads the stream")
	return nil
}

// cut cuts (or restores) every link of node i.
func (c *procCluster) cut(i int, b bool) {
	for j := range 3 {
		for _, l := range []*linkProxy{c.links[i][j], c.links[j][i]} {
			if l != nil {
				l.block(b)
			}
		}
	}
}

var appliedRe = regexp.MustCompile(`(?m)^incidentlib_cluster_applied_seq (\S+)$`)

var (
	healthyRe = regexp.MustCompile(`(?m)^incidentlib_cluster_jetstream_healthy (\S+)$`)
	quorumRe  = regexp.MustCompile(`(?m)^incidentlib_cluster_quorum (\S+)$`)
)

// settled waits until every node reaches the stream's leader and its NATS
// server's health check passes (its copy of the stream current, nothing
// catching up): what an operator waits for before stopping a node (a
// copy still catching up cannot stand in for a lost leader, so a fault
// before that tests NATS's refusal to lose data, not a failover).
func (c *procCluster) settled() {
	t := c.t
	t.Helper()
	var views []string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		views = views[:0]
		all := true
		for _, n := range c.nodes {
			h, _ := metric(n.base, healthyRe)
			q, _ := metric(n.base, quorumRe)
			all = all && h == 1 && q == 1
			views = append(views, fmt.Sprintf("%s: healthy %v, quorum %v", n.name, h, q))
		}
		if all {
			return
		}
	}
	t.Fatalf("the cluster did not settle: %s", strings.Join(views, "; "))
}

func metric(base string, re *regexp.Regexp) (float64, bool) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := re.FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	return v, err == nil
}

// level waits until the three nodes applied the log to the same position
// and then compares their stores: the exports of their backups, with
// the history, are byte-identical and check is clean on each.
func (c *procCluster) level() {
	t := c.t
	t.Helper()
	var seqs []float64
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		seqs = seqs[:0]
		for _, n := range c.nodes {
			v, _ := metric(n.base, appliedRe)
			seqs = append(seqs, v)
		}
		if seqs[0] > 0 && seqs[0] == seqs[1] && seqs[1] == seqs[2] {
			break
		}
	}
	if !(seqs[0] == seqs[1] && seqs[1] == seqs[2]) {
		var logs strings.Builder
		for _, n := range c.nodes {
			fmt.Fprintf(&logs, "\n%s's log:\n%s", n.name, tail(n.stderr.String(), 8<<10))
		}
		t.Fatalf("the nodes did not come level: applied %v%s", seqs, logs.String())
	}
	var first []byte
	for _, n := range c.nodes {
		exp := c.exportOf(n)
		if first == nil {
			first = exp
			continue
		}
		if !bytes.Equal(first, exp) {
			t.Fatalf("the export of %s differs from n1's (%d and %d bytes)", n.name, len(exp), len(first))
		}
	}
}

// deathRe finds where a Go process's stderr says it died: a panic, a
// fatal error, or (built with INCIDENTLIB_TEST_RACE=1) a data race.
var deathRe = regexp.MustCompile(`(?m)^(panic: |fatal error: |WARNING: DATA RACE)`)

// tail returns the last n bytes of s, or, where the process died (deathRe),
// n bytes from there.
func tail(s string, n int) string {
	if loc := deathRe.FindStringIndex(s); loc != nil {
		return s[loc[0]:min(len(s), loc[0]+n)] + "…"
	}
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// backupOf takes a backup of node n through its API into a file of the
// test's named after n and what, and returns its path.
func (c *procCluster) backupOf(n *clusterNode, what string) string {
	t := c.t
	req, _ := http.NewRequest(http.MethodGet, n.base+"/admin/backup", nil)
	req.Header.Set("Authorization", "Bearer "+crashToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("backup of %s: %s", n.name, resp.Status)
	}
	path := filepath.Join(t.TempDir(), n.name+"."+what+".db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// exportOf takes a backup of node n through its API and exports it.
func (c *procCluster) exportOf(n *clusterNode) []byte {
	t := c.t
	path := c.backupOf(n, "backup")
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var buf bytes.Buffer
	if err := db.Maintenance().Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if err := db.Versions().ExportHistory(context.Background(), &buf); err != nil { // every version, author and time
		t.Fatal(err)
	}
	problems, err := db.Maintenance().Check(context.Background())
	if err != nil || len(problems) > 0 {
		t.Fatalf("check of %s: %v %v", n.name, problems, err)
	}
	return buf.Bytes()
}

// gqlWrite sends an upsert of id with title to base and returns the HTTP
// status, the error code (if any) and whether it was acknowledged.
func gqlWrite(ctx context.Context, c *http.Client, base, id, title string, expected *string) (status int, code string, updatedAt string) {
	input := map[string]any{"id": id, "org": "Cluster Test", "orgSlug": "cluster-test", "title": map[string]any{"en": title}, "domain": []string{"database"}}
	if expected != nil {
		input["expectedUpdatedAt"] = *expected
	}
	body, _ := json.Marshal(map[string]any{"query": `mutation($input: IncidentInput!) {
  upsertIncident(input: $input) { incident { title(lang: EN) updatedAt } userErrors { code } } }`, "variables": map[string]any{"input": input}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+crashToken)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "NETWORK", ""
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			UpsertIncident *struct {
				Incident *struct {
					Title     string
					UpdatedAt string
				}
				UserErrors []struct{ Code string }
			} `json:"upsertIncident"`
		}
		Errors []struct {
			Message    string
			Extensions struct{ Code string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, "UNDECODABLE", ""
	}
	if len(out.Errors) > 0 {
		lastWriteError.Store(out.Errors[0].Message)
		return resp.StatusCode, out.Errors[0].Extensions.Code, ""
	}
	u := out.Data.UpsertIncident
	if u == nil || u.Incident == nil {
		if u != nil && len(u.UserErrors) > 0 {
			return resp.StatusCode, u.UserErrors[0].Code, ""
		}
		return resp.StatusCode, "EMPTY", ""
	}
	if u.Incident.Title != title {
		return resp.StatusCode, "WRONG_TITLE", ""
	}
	return resp.StatusCode, "", u.Incident.UpdatedAt
}

// readTitle reads incident id's title from base, and whether the answer
// was marked stale.
func readTitle(base, id string) (title string, stale bool, err error) {
	return readTitleOnce(base, id, false)
}

func readTitleOnce(base, id string, retried bool) (title string, stale bool, err error) {
	body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { incident(id: $id) { title(lang: EN) } }`, "variables": map[string]any{"id": id}})
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Incident *struct{ Title string }
		}
		Extensions struct{ Stale bool }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", false, err
	}
	// The header and the extension say the same (each is read once per
	// request, at its start and at its end: a request that met the moment
	// the quorum came or went is asked again).
	if h := resp.Header.Get("Incidentlib-Stale") == "true"; h != out.Extensions.Stale {
		if !retried {
			return readTitleOnce(base, id, true)
		}
		return "", false, fmt.Errorf("extensions.stale is %v but the Incidentlib-Stale header says %v", out.Extensions.Stale, h)
	}
	if out.Data.Incident != nil {
		title = out.Data.Incident.Title
	}
	return title, out.Extensions.Stale, nil
}

// historyTitles reads the English titles of every version of incident id
// from base, oldest first.
func historyTitles(t *testing.T, base, id string) []string {
	t.Helper()
	var titles []string
	var after *string
	for {
		body, _ := json.Marshal(map[string]any{"query": `query($id: ID!, $after: String) { incident(id: $id) {
  history(first: 100, after: $after) { nodes { record } pageInfo { hasNextPage endCursor } } } }`, "variables": map[string]any{"id": id, "after": after}})
		req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+crashToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Data struct {
				Incident *struct {
					History struct {
						Nodes []struct {
							Record *struct {
								Title struct{ En string }
							}
						}
						PageInfo struct {
							HasNextPage bool
							EndCursor   string
						}
					}
				}
			}
			Errors []struct{ Message string }
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || len(out.Errors) > 0 || out.Data.Incident == nil {
			t.Fatalf("history of %s: %v %v", id, err, out.Errors)
		}
		h := out.Data.Incident.History
		for _, n := range h.Nodes {
			if n.Record != nil {
				titles = append(titles, n.Record.Title.En)
			}
		}
		if !h.PageInfo.HasNextPage {
			break
		}
		after = &h.PageInfo.EndCursor
	}
	// Newest first: turned to the order written.
	for i, j := 0, len(titles)-1; i < j; i, j = i+1, j-1 {
		titles[i], titles[j] = titles[j], titles[i]
	}
	return titles
}

// writeUntil writes through base until a write is acknowledged.
func writeUntil(t *testing.T, base, id, title string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	var code string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, code, _ = gqlWrite(context.Background(), c, base, id, title, nil); code == "" {
			return
		}
	}
	t.Fatalf("no write through %s was acknowledged (last: %s: %v); the node's view of the cluster: %s", base, code, lastWriteError.Load(), clusterMetrics(base))
}

// lastWriteError is the message of the last error a write was answered
// with, for a failure's message.
var lastWriteError atomic.Value

var clusterMetricRe = regexp.MustCompile(`(?m)^incidentlib_cluster_\S+ \S+$`)

// clusterMetrics returns node base's cluster metrics, for a failure's
// message.
func clusterMetrics(base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Join(clusterMetricRe.FindAllString(string(b), -1), "; ")
}

func TestClusterProcesses(t *testing.T) {
	bin := buildBinary(t)
	c := newProcCluster(t, bin)
	t.Run("WritesEverywhere", func(t *testing.T) {
		for i, n := range c.nodes {
			writeUntil(t, n.base, fmt.Sprintf("IL-%04d", 7000+i), "written through "+n.name)
		}
		c.level()
	})
	t.Run("ConflictAcrossNodes", func(t *testing.T) {
		hc := &http.Client{Timeout: 10 * time.Second}
		_, code, at := gqlWrite(context.Background(), hc, c.nodes[0].base, "IL-7100", "base", nil)
		if code != "" {
			t.Fatal(code)
		}
		var wg sync.WaitGroup
		codes := make([]string, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, codes[i], _ = gqlWrite(context.Background(), hc, c.nodes[i+1].base, "IL-7100", fmt.Sprint("writer ", i), &at)
			}()
		}
		wg.Wait()
		if !(codes[0] == "" && codes[1] == "CONFLICT" || codes[0] == "CONFLICT" && codes[1] == "") {
			t.Fatalf("two writers with the same expected version got %q and %q: want one success and one CONFLICT", codes[0], codes[1])
		}
		c.level()
	})
	t.Run("SIGKILLDuringBurst", func(t *testing.T) { c.settled(); testClusterKill(t, c) })
	t.Run("WipedFromSnapshot", func(t *testing.T) { c.settled(); testClusterWiped(t, c) })
	t.Run("SIGSTOP", func(t *testing.T) {
		c.settled()
		stopped := c.leader() // the hardest case: the others must elect a new leader
		var others []*clusterNode
		for _, n := range c.nodes {
			if n != stopped {
				others = append(others, n)
			}
		}
		if err := stopped.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = stopped.cmd.Process.Signal(syscall.SIGCONT)
			if t.Failed() {
				t.Logf("%s's log:\n%s\n%s's log:\n%s\n%s's metrics: %s", others[0].name, others[0].stderr, others[1].name, others[1].stderr,
					others[1].name, clusterMetrics(others[1].base))
			}
		}()
		writeUntil(t, others[0].base, "IL-7200", "while the leader is stopped (1)")
		writeUntil(t, others[1].base, "IL-7201", "while the leader is stopped (2)")
		if err := stopped.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		c.level()
	})
	t.Run("Partition", func(t *testing.T) {
		c.settled()
		cut := c.nodes[0]
		c.cut(0, true)
		// The cut-off node answers reads from its store, marked stale, and
		// refuses writes.
		var stale bool
		for deadline := time.Now().Add(60 * time.Second); !stale && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			title, s, err := readTitle(cut.base, "IL-7000")
			if err != nil || title != "written through n1" {
				t.Fatalf("the cut-off node read %q, %v", title, err)
			}
			stale = s
		}
		if !stale {
			t.Fatal("the cut-off node's reads are not marked stale")
		}
		// Its NATS server's health check fails too (no contact with the
		// meta group's or the stream's leader): its gauge goes to 0.
		healthy := 1.0
		for deadline := time.Now().Add(60 * time.Second); healthy != 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			healthy, _ = metric(cut.base, healthyRe)
		}
		if healthy != 0 {
			t.Fatal("the cut-off node's incidentlib_cluster_jetstream_healthy stayed 1")
		}
		hc := &http.Client{Timeout: 30 * time.Second}
		status, code, _ := gqlWrite(context.Background(), hc, cut.base, "IL-7300", "through the cut-off node", nil)
		if code != "UNAVAILABLE" && code != "OUTCOME_UNKNOWN" {
			t.Fatalf("a write through the cut-off node answered %d %q, want UNAVAILABLE or OUTCOME_UNKNOWN", status, code)
		}
		if code == "OUTCOME_UNKNOWN" && status != http.StatusServiceUnavailable {
			t.Fatalf("OUTCOME_UNKNOWN answered HTTP %d, want 503", status)
		}
		writeUntil(t, c.nodes[1].base, "IL-7301", "while n1 is cut off (n2)")
		writeUntil(t, c.nodes[2].base, "IL-7302", "while n1 is cut off (n3)")
		c.cut(0, false)
		c.level()
		// Every node, n1 included, has its quorum again: its reads stop
		// being marked stale (each node checks its quorum on its own
		// period, so this is waited for, not read once).
		for i, n := range c.nodes {
			stale := true
			for deadline := time.Now().Add(60 * time.Second); stale && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				_, stale, _ = readTitle(n.base, "IL-7301")
			}
			if stale {
				t.Errorf("n%d has its quorum again but marks reads stale", i+1)
			}
		}
	})
}

// testClusterWiped wipes a node that does not lead the stream (its store
// and its JetStream directory) and starts it again: it starts from the
// cluster's latest snapshot and catches up with the stream after it.
func testClusterWiped(t *testing.T, c *procCluster) {
	leader := c.leader()
	var wiped *clusterNode
	for _, n := range c.nodes {
		if n != leader {
			wiped = n
		}
	}
	writeUntil(t, leader.base, "IL-7500", "before the snapshot")
	time.Sleep(5 * time.Second) // at least one snapshot after that write
	c.kill(wiped)
	for _, p := range []string{wiped.db, wiped.db + ".jetstream"} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	writeUntil(t, leader.base, "IL-7501", "while a node is wiped")
	wiped.logLevel = "info"
	defer func() { wiped.logLevel = "" }()
	c.start(wiped)
	c.serving(wiped)
	c.waitReady(wiped)
	c.level()
	if !strings.Contains(wiped.stderr.String(), "started from the cluster's snapshot") {
		t.Fatalf("the wiped node did not start from a snapshot:\n%s", wiped.stderr)
	}
	if title, _, err := readTitle(wiped.base, "IL-7501"); err != nil || title != "while a node is wiped" {
		t.Fatalf("the wiped node reads %q, %v", title, err)
	}
}

// testClusterKill sends concurrent writes from several clients through
// every node and SIGKILLs one node in the middle: no acknowledged write
// is lost, the two others keep accepting writes, and the killed node
// catches up after its restart.
func testClusterKill(t *testing.T, c *procCluster) {
	const clients = 6
	victim := c.nodes[rand.IntN(3)]
	if rand.IntN(2) == 0 {
		victim = c.leader()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	acked := make([]int, clients)      // the last version acknowledged, per client
	ackedAll := make([][]int, clients) // every version acknowledged, per client
	attempted := make([]int, clients)  // the last version sent
	afterKill := make([]int, clients)  // acknowledged writes after the kill
	var killed sync.Once
	var killedAt time.Time
	var firstAfter atomic.Int64 // when the first write after the kill was acknowledged
	killedC := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Timeout: 10 * time.Second}
			id := fmt.Sprintf("IL-%04d", 7400+i)
			for v := 1; ctx.Err() == nil; v++ {
				n := c.nodes[(i+v)%3]
				attempted[i] = v
				if _, code, _ := gqlWrite(ctx, hc, n.base, id, fmt.Sprintf("crash v%d", v), nil); code == "" {
					acked[i] = v
					ackedAll[i] = append(ackedAll[i], v)
					select {
					case <-killedC:
						afterKill[i]++
						firstAfter.CompareAndSwap(0, time.Now().UnixNano())
					default:
					}
				}
			}
		}()
	}
	time.Sleep(3 * time.Second)
	killed.Do(func() { killedAt = time.Now(); c.kill(victim); close(killedC) })
	time.Sleep(8 * time.Second)
	for deadline := time.Now().Add(45 * time.Second); firstAfter.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond) // an election under load may take longer
	}
	cancel()
	wg.Wait()
	total := 0
	for _, n := range afterKill {
		total += n
	}
	if total == 0 {
		t.Fatalf("no write was acknowledged after %s was killed", victim.name)
	}
	c.start(victim)
	c.serving(victim)
	c.waitReady(victim)
	c.level()
	for i := range clients {
		title, _, err := readTitle(victim.base, fmt.Sprintf("IL-%04d", 7400+i))
		if err != nil {
			t.Fatal(err)
		}
		v := versionOf(title)
		if v < acked[i] || v > attempted[i] {
			t.Errorf("client %d: stored version %d, acknowledged %d, attempted %d", i, v, acked[i], attempted[i])
		}
		// Applied at most once, in the order sent, and every acknowledged
		// write is there: the incident's history names each title once,
		// growing, and holds every version a client was told was written.
		seen := map[int]bool{}
		prev := 0
		for _, title := range historyTitles(t, victim.base, fmt.Sprintf("IL-%04d", 7400+i)) {
			v := versionOf(title)
			if seen[v] || v <= prev {
				t.Errorf("client %d: version %d applied twice or out of order (after %d)", i, v, prev)
			}
			seen[v], prev = true, v
		}
		for _, v := range ackedAll[i] {
			if !seen[v] {
				t.Errorf("client %d: acknowledged version %d is not in the history", i, v)
			}
		}
	}
	t.Logf("killed %s; %d writes acknowledged after the kill, the first %s after it (a figure, not a bound)",
		victim.name, total, time.Unix(0, firstAfter.Load()).Sub(killedAt).Round(time.Millisecond))
}
