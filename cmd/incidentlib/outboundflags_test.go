package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib/internal/testutil"
)

func TestOutboundFlagsNonsenseRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "il.db")
	for name, c := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"ErrFollowNotAURL":             {args: []string{"--follow", "primary:8080"}},
		"ErrFollowNotHTTP":             {args: []string{"--follow", "ftp://primary"}},
		"ErrFollowWithQuery":           {args: []string{"--follow", "http://primary:8080/?a=b"}},
		"ErrFollowIntervalZero":        {args: []string{"--follow-interval", "0s"}},
		"ErrFollowIntervalTooLong":     {args: []string{"--follow-interval", "2h"}},
		"ErrFollowIntervalNoUnit":      {args: []string{"--follow-interval", "5"}},
		"ErrFollowWaitTooLong":         {args: []string{"--follow-wait", "61s"}},
		"ErrFollowWaitNegative":        {args: []string{"--follow-wait", "-1s"}},
		"ErrUpstreamNotAURL":           {args: []string{"--upstream", "library"}},
		"ErrUpstreamCacheSizeZero":     {args: []string{"--upstream-cache-size", "0"}},
		"ErrUpstreamCacheTTLZero":      {args: []string{"--upstream-cache-ttl", "0s"}},
		"ErrUpstreamTimeoutZero":       {args: []string{"--upstream-timeout", "0s"}},
		"ErrLinkcheckIntervalTooOften": {args: []string{"--linkcheck-interval", "10s"}},
		"ErrLinkcheckOnAReplica":       {args: []string{"--follow", "http://primary:8080", "--linkcheck-interval", "24h"}},
		"ErrLinkcheckPerHostZero":      {args: []string{"--linkcheck-per-host", "0"}},
		"ErrLinkcheckPerHostTooMany":   {args: []string{"--linkcheck-per-host", "65"}},
		"ErrFollowWaitEnv":             {env: map[string]string{"INCIDENTLIB_FOLLOW_WAIT": "soon"}},
		"ErrUpstreamEnv":               {env: map[string]string{"INCIDENTLIB_UPSTREAM": "nowhere"}},
		"ErrLinkcheckAllowPrivateEnv":  {env: map[string]string{"INCIDENTLIB_LINKCHECK_ALLOW_PRIVATE": "maybe"}},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, c.args...)
			_, stderr, err := runCmd(t, c.env, "", args...)
			if err == nil {
				t.Fatalf("accepted %v %v", c.args, c.env)
			}
			if _, statErr := os.Stat(db); statErr == nil {
				t.Fatalf("the store was created before the flags were checked: %s", stderr)
			}
		})
	}
}

// serveBg runs serve in-process until the test ends.
func serveBg(t *testing.T, args ...string) (base string, stderr *syncBuffer) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stderr = &syncBuffer{}
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", addr}, args...), func(string) string { return "" },
			strings.NewReader(""), io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve %v ended with %v", args, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve %v did not shut down", args)
		}
	})
	waitHealthy(t, "http://"+addr, done)
	return "http://" + addr, stderr
}

func postQuery(t *testing.T, base, q string) string {
	t.Helper()
	resp, err := http.Post(base+"/graphql", "application/json", strings.NewReader(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestServeFollow(t *testing.T) {
	dir := t.TempDir()
	primary, _ := serveBg(t, "--db", filepath.Join(dir, "primary.db"))
	// The replica is ready only once it holds the primary's incidents; it
	// does not load the seeds itself.
	replica, _ := serveBg(t, "--db", filepath.Join(dir, "replica.db"), "--follow", primary, "--follow-wait", "1s")
	if got := postQuery(t, replica, `{"query":"{ incidents { totalCount } incident(id: \"IL-0213\") { org } }"}`); !strings.Contains(got, `"totalCount":44`) || !strings.Contains(got, `"org":"Roblox"`) {
		t.Fatalf("the ready replica answered %s", got)
	}
	got := postQuery(t, replica, `{"query":"mutation { deleteIncident(id: \"IL-0213\") { deletedId } }"}`)
	if !strings.Contains(got, `"READ_ONLY"`) || !strings.Contains(got, primary) {
		t.Fatalf("a mutation on the replica answered %s", got)
	}
	resp, err := http.Get(replica + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"incidentlib_follow_seq 44", "incidentlib_follow_lag_seconds 0", "incidentlib_outbound_conn_new_total"} {
		if !strings.Contains(string(metrics), m) {
			t.Fatalf("replica metrics lack %q", m)
		}
	}
}

func TestUpstreamLinksCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "il.db")
	rec := filepath.Join(dir, "rec.json")
	if err := os.WriteFile(rec, []byte(`{"id":"IL-0001","org":"Foo","org_slug":"foo","title":{"en":"X"},"related":["IL-9001"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, nil, "", "import", "--db", db, rec); err == nil {
		t.Fatal("a link to an unknown incident was imported without --upstream")
	}
	env := map[string]string{"INCIDENTLIB_UPSTREAM": "http://library.example:8080"}
	if out, stderr, err := runCmd(t, env, "", "import", "--db", db, rec); err != nil {
		t.Fatalf("import with an upstream: %v %s %s", err, out, stderr)
	}
	out, _, err := runCmd(t, env, "", "check", "--db", db)
	if err != nil || !strings.Contains(out, "incident IL-0001: related IL-9001 is an upstream link") || !strings.Contains(out, "check: ok") {
		t.Fatalf("check with the upstream: %v\n%s", err, out)
	}
	out, _, err = runCmd(t, nil, "", "check", "--db", db)
	if err == nil || !strings.Contains(out, "dangling link") {
		t.Fatalf("check without the upstream should report a dangling link: %v\n%s", err, out)
	}
}

func TestLinkcheckCommand(t *testing.T) {
	var hits atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "il.db")
	rec := filepath.Join(dir, "rec.jsonl")
	lines := `{"id":"IL-0001","org":"Foo","org_slug":"foo","title":{"en":"X"},"sources":[{"url":"` + site.URL + `/post"}]}` + "\n" +
		`{"id":"IL-0002","org":"Foo","org_slug":"foo","title":{"en":"Y"},"sources":[{"url":"` + site.URL + `/gone"}]}` + "\n"
	if err := os.WriteFile(rec, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, nil, "", "import", "--db", db, rec); err != nil {
		t.Fatal(err)
	}
	// The site is on loopback: by default it is out of reach, and what
	// is recorded says so.
	out, stderr, err := runCmd(t, nil, "", "linkcheck", "--db", db, "--linkcheck-per-host", "1")
	if err != nil || !strings.Contains(out, "2 no response (2 refused addresses)") || hits.Load() != 0 {
		t.Fatalf("linkcheck of loopback links: %v, %d requests reached the site\n%s\n%s", err, hits.Load(), out, stderr)
	}
	exp, _, err := runCmd(t, nil, "", "export", "--db", db)
	if err != nil || strings.Count(exp, `"check_error":"refused: loopback address"`) != 2 || strings.Contains(exp, "final_url") || strings.Count(exp, `"status":0`) != 2 {
		t.Fatalf("export after the refused linkcheck: %v\n%s", err, exp)
	}
	// check_error round-trips like the other fields of a check.
	again := filepath.Join(dir, "again.db")
	if _, stderr, err := runCmd(t, nil, exp, "import", "--db", again, "-"); err != nil {
		t.Fatalf("import of the export: %v\n%s", err, stderr)
	}
	if exp2, _, err := runCmd(t, nil, "", "export", "--db", again); err != nil || exp2 != exp {
		t.Fatalf("export -> import -> export changed:\n%s\n%s", exp, exp2)
	}
	// --linkcheck-allow-private (here from the environment) gives the
	// reach back.
	env := map[string]string{"INCIDENTLIB_LINKCHECK_ALLOW_PRIVATE": "true"}
	out, stderr, err = runCmd(t, env, "", "linkcheck", "--db", db, "--linkcheck-per-host", "1")
	if err != nil || !strings.Contains(out, "checked 2 source URLs on 1 hosts: 1 ok (0 redirected), 1 4xx") {
		t.Fatalf("linkcheck: %v\n%s\n%s", err, out, stderr)
	}
	exp, _, err = runCmd(t, nil, "", "export", "--db", db)
	if err != nil || !strings.Contains(exp, `"final_url":"`+site.URL+`/post","status":200}`) || !strings.Contains(exp, `"status":404}`) || strings.Contains(exp, "check_error") {
		t.Fatalf("export after linkcheck: %v\n%s", err, exp)
	}
}
