// Elections under the race detector make this slow: make test runs it
// without it, in test-cluster.

//go:build !race

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
)

// The admin's mutations on a cluster, through serve's own handler (three
// nodes in this process, each with its embedded server and store): a
// token made through n1 writes through n2, a term it adds there is served
// by n3, and the token revoked through n3 is refused by n1.
func TestClusterAdminMutationsThroughHTTP(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("a-shared-secret-of-the-admin-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "INCIDENTLIB_ADMIN_TOKEN" {
			return crashToken
		}
		return ""
	}
	var listens, bases []string
	for range 3 {
		listens = append(listens, testutil.FreeAddr(t))
		bases = append(bases, "http://"+testutil.FreeAddr(t))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var dones []chan error
	var logs []*syncBuffer
	for i := range 3 {
		done, logBuf := make(chan error, 1), &syncBuffer{}
		dones, logs = append(dones, done), append(logs, logBuf)
		args := []string{"serve", "--addr", strings.TrimPrefix(bases[i], "http://"), "--db", filepath.Join(dir, "n"+string(rune('1'+i))+".db"),
			"--seed", "none", "--log-level", "warn", "--cluster-name", "admin", "--node-name", "n" + string(rune('1'+i)),
			"--cluster-listen", listens[i], "--cluster-peers", strings.Join(listens, ","), "--cluster-secret-file", secretFile,
			"--cluster-write-timeout", "10s", "--cluster-start-timeout", "60s", "--response-cache-size", "0"}
		go func() { done <- run(ctx, args, getenv, strings.NewReader(""), io.Discard, logBuf) }()
	}
	t.Cleanup(func() {
		cancel()
		for i, done := range dones {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("n%d ended with %v; %s", i+1, err, logs[i])
				}
			case <-time.After(30 * time.Second):
				t.Errorf("n%d did not shut down", i+1)
			}
		}
	})
	for i, base := range bases {
		waitReadyFor(t, base, dones[i], 2*time.Minute)
	}

	post := func(base, token, query string) map[string]any {
		t.Helper()
		status, _, out := gql(t, base, token, query, nil)
		if status != http.StatusOK || out["errors"] != nil {
			t.Fatalf("%s answered %d %s", base, status, out["raw"])
		}
		return out["data"].(map[string]any)
	}
	userErrors := func(data map[string]any, field string) []any {
		return data[field].(map[string]any)["userErrors"].([]any)
	}
	// eventually waits until the answer of base to query with token
	// has status and holds want: a node knows a write once it applied it.
	eventually := func(base, token, query string, status int, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, _, out := gql(t, base, token, query, nil)
			if got == status && strings.Contains(out["raw"].(string), want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s answered %d %s, want %d with %s", base, got, out["raw"], status, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	data := post(bases[0], crashToken, `mutation { createToken(name: "ops", role: ADMIN) { token userErrors { code } } }`)
	secret, _ := data["createToken"].(map[string]any)["token"].(string)
	if !strings.HasPrefix(secret, incidentlib.TokenPrefix) {
		t.Fatalf("createToken through n1 answered %v", data)
	}
	eventually(bases[1], secret, `{ __typename }`, http.StatusOK, "Query")
	data = post(bases[1], secret, `mutation { addTerm(input: {kind: COMPONENT, slug: "edge-cache", label: {en: "Edge cache"}}) { term { slug } userErrors { code } } }`)
	if ues := userErrors(data, "addTerm"); len(ues) != 0 {
		t.Fatalf("addTerm through n2: %v", data)
	}
	data = post(bases[1], secret, `mutation { addTerm(input: {kind: COMPONENT, slug: "edge-cache", label: {en: "Edge cache"}}) { userErrors { code } } }`)
	if ues := userErrors(data, "addTerm"); len(ues) != 1 || ues[0].(map[string]any)["code"] != incidentlib.ECONFLICT {
		t.Fatalf("adding the term again through n2: %v", data)
	}
	eventually(bases[2], "", `{ taxonomy(kind: COMPONENT) { slug } }`, http.StatusOK, `"edge-cache"`)
	data = post(bases[2], crashToken, `mutation { revokeToken(name: "ops") { info { name } userErrors { code } } }`)
	if ues := userErrors(data, "revokeToken"); len(ues) != 0 {
		t.Fatalf("revokeToken through n3: %v", data)
	}
	eventually(bases[0], secret, `{ __typename }`, http.StatusUnauthorized, incidentlib.EUNAUTHENTICATED)
}
