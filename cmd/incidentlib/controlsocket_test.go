package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
)

// TestTokenAddThroughTheControlSocket runs the real binary: serve holds
// the store (a stale socket of an earlier server beside it, which it
// clears); token add --db reaches it through its control socket, and the
// token writes on /graphql at once; list and revoke do the same; a socket
// whose permissions let others in is refused.
func TestTokenAddThroughTheControlSocket(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "live.db")
	sock := db + controlSocketSuffix
	// A stale socket: its server is gone.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	p := startServe(t, bin, db)
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the control socket: %v %v", fi, err)
	}

	out, errOut, code := runBin(t, bin, "token", "add", "--db", db, "--open-timeout", "100ms", "--name", "kim", "--role", "editor")
	if code != 0 {
		t.Fatalf("token add --db while serving: exit %d: %s", code, errOut)
	}
	secret := newTokenOf(t, out)
	post := func(query string, vars map[string]any) (int, string) {
		return postGraphQL(t, p.base, "Bearer "+secret, query, vars)
	}
	status, body := post(`mutation($i: IncidentInput!) { upsertIncident(input: $i) { incident { id } userErrors { code } } }`,
		map[string]any{"i": map[string]any{"id": "IL-0001", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x"}}})
	if status != http.StatusOK || strings.Contains(body, `"code"`) || !strings.Contains(body, `"IL-0001"`) {
		t.Fatalf("the new token's upsert: %d %s", status, body)
	}

	if _, errOut, code := runBin(t, bin, "token", "add", "--db", db, "--open-timeout", "100ms", "--name", "kim", "--role", "editor"); code == 0 ||
		!strings.Contains(errOut, "kim") {
		t.Fatalf("a second kim through the socket: exit %d %s", code, errOut)
	}
	list, errOut, code := runBin(t, bin, "token", "list", "--db", db, "--open-timeout", "100ms")
	if code != 0 || !strings.Contains(list, "kim") || !strings.Contains(list, "editor") || strings.Contains(list, incidentlib.TokenPrefix) {
		t.Fatalf("token list --db while serving: exit %d: %s %s", code, list, errOut)
	}
	if _, errOut, code := runBin(t, bin, "token", "list", "--db", db, "--open-timeout", "100ms", "--control-socket", "off"); code == 0 ||
		!strings.Contains(errOut, "--server") {
		t.Fatalf("token list --db --control-socket off while serving: exit %d %s", code, errOut)
	}

	t.Run("LoosePermissions", func(t *testing.T) {
		for _, c := range []struct {
			path string
			mode os.FileMode
		}{{sock, 0o666}, {dir, 0o777}} {
			if err := os.Chmod(c.path, c.mode); err != nil {
				t.Fatal(err)
			}
			_, errOut, code := runBin(t, bin, "token", "list", "--db", db, "--open-timeout", "100ms")
			if code == 0 || !strings.Contains(errOut, "refused the control socket") {
				t.Errorf("a control socket with %s at %04o: exit %d %s", c.path, c.mode, code, errOut)
			}
		}
		if err := os.Chmod(sock, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	})

	if _, errOut, code := runBin(t, bin, "token", "revoke", "--db", db, "--open-timeout", "100ms", "kim"); code != 0 {
		t.Fatalf("token revoke --db while serving: exit %d %s", code, errOut)
	}
	if status, body := post(`{ __typename }`, nil); status != http.StatusUnauthorized || !strings.Contains(body, incidentlib.EUNAUTHENTICATED) {
		t.Fatalf("the revoked token: %d %s", status, body)
	}
}

// TestControlSocketFlag: a nonsensical --control-socket is refused at
// start-up, an explicit one in a directory others may write too, and off
// serves none.
func TestControlSocketFlag(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "il.db")
	for _, v := range []string{"", "sockets/", "/" + strings.Repeat("x", maxSocketPath+1)} {
		if _, _, err := runCmd(t, nil, "", "serve", "--db", db, "--control-socket", v); err == nil || !strings.Contains(err.Error(), "--control-socket") {
			t.Errorf("--control-socket %q: %v", v, err)
		}
	}
	loose := filepath.Join(dir, "loose")
	if err := os.Mkdir(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCmd(t, nil, "", "serve", "--addr", "127.0.0.1:0", "--db", db, "--seed", "none", "--control-socket", filepath.Join(loose, "c.sock"))
	if err == nil || !strings.Contains(err.Error(), "--control-socket") || !strings.Contains(err.Error(), "others may write") {
		t.Errorf("an explicit socket in a directory others may write: %v", err)
	}
}

// postGraphQL posts a GraphQL request to base with the Authorization
// header auth and returns the status and the body.
func postGraphQL(t *testing.T, base, auth, query string, vars map[string]any) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
