package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// newTokenOf returns the token token add printed, checking that it is
// alone on the last line of out and nowhere else.
func newTokenOf(t *testing.T, out string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, incidentlib.TokenPrefix) || len(last) != len(incidentlib.TokenPrefix)+43 || strings.ContainsAny(last, " \t") {
		t.Fatalf("the last line of stdout is not a token alone: %q", out)
	}
	if !strings.HasSuffix(out, last+"\n") || strings.Count(out, last) != 1 {
		t.Fatalf("the token is not alone on the last line: %q", out)
	}
	return last
}

// TestTokenCommandsOnAClosedStore: token add creates the store when no
// file is there (taxonomy only: the seeds still load into it), prints the
// token once on the last line; list never shows it; revoke; flags that
// make no sense are refused before anything is opened.
func TestTokenCommandsOnAClosedStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "new", "lib.db")
	out, errOut, err := runCmd(t, nil, "", "token", "add", "--db", db, "--name", "alice", "--role", "editor", "--expires", "30d")
	if err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	secret := newTokenOf(t, out)
	if !strings.Contains(out, `The name "alice" is public`) {
		t.Fatalf("token add does not say the name is public: %q", out)
	}
	out2, _, err := runCmd(t, nil, "", "token", "add", "--db", db, "--name", "boss", "--role", "admin")
	if err != nil {
		t.Fatal(err)
	}
	newTokenOf(t, out2)

	list, _, err := runCmd(t, nil, "", "token", "list", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list, "alice") || !strings.Contains(list, "editor") || !strings.Contains(list, "boss") ||
		strings.Contains(list, incidentlib.TokenPrefix) || strings.Contains(list, secret) {
		t.Fatalf("list:\n%s", list)
	}
	if _, _, err := runCmd(t, nil, "", "token", "revoke", "--db", db, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, nil, "", "token", "revoke", "--db", db, "alice"); err == nil {
		t.Fatal("a second revoke of the same token was accepted")
	}
	list, _, _ = runCmd(t, nil, "", "token", "list", "--db", db)
	if !strings.Contains(list, "revoked") {
		t.Fatalf("list after revoke:\n%s", list)
	}

	t.Run("SeedsStillLoad", func(t *testing.T) {
		s, err := storage.Open(db, storage.Options{Taxonomy: seeds.MustTaxonomy()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Tokens().Authenticate(context.Background(), secret); incidentlib.ErrorCode(err) != incidentlib.EUNAUTHENTICATED {
			t.Fatalf("the revoked token authenticates: %v", err)
		}
		incs, err := seeds.Incidents()
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true, OnlyIfNew: true})
		if err != nil || res.Created != len(incs) {
			t.Fatalf("a store holding only tokens did not take the seeds: %+v %v", res, err)
		}
	})

	for name, args := range map[string][]string{
		"NoName":        {"add", "--db", db, "--role", "editor"},
		"ReaderRole":    {"add", "--db", db, "--name", "x", "--role", "reader"},
		"BadRole":       {"add", "--db", db, "--name", "x", "--role", "owner"},
		"ReservedName":  {"add", "--db", db, "--name", "admin", "--role", "admin"},
		"ReleaseName":   {"add", "--db", db, "--name", "Release", "--role", "editor"},
		"BadName":       {"add", "--db", db, "--name", "has space", "--role", "editor"},
		"PastExpiry":    {"add", "--db", db, "--name", "x", "--role", "editor", "--expires", "2001-01-01"},
		"NegativeDays":  {"add", "--db", db, "--name", "x", "--role", "editor", "--expires", "-3d"},
		"NotADuration":  {"add", "--db", db, "--name", "x", "--role", "editor", "--expires", "soon"},
		"DBAndServer":   {"add", "--db", db, "--server", "http://127.0.0.1:1", "--token", "t", "--name", "x", "--role", "editor"},
		"RevokeNoName":  {"revoke", "--db", db},
		"ListArgs":      {"list", "--db", db, "extra"},
		"NoSubcommand":  {},
		"BadSubcommand": {"rotate"},
	} {
		t.Run("Refused/"+name, func(t *testing.T) {
			if out, _, err := runCmd(t, nil, "", append([]string{"token"}, args...)...); err == nil {
				t.Fatalf("accepted: %s", out)
			}
		})
	}
	t.Run("ListOfAMissingStoreCreatesNothing", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "none.db")
		if _, _, err := runCmd(t, nil, "", "token", "list", "--db", missing); err == nil {
			t.Fatal("list of a missing store succeeded")
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatal("list created a store")
		}
	})
}

// TestTokenCommandsThroughARunningServer runs the real binary: serve holds
// the store; token add, list and revoke go through its admin mutations;
// the new token writes as its name and is refused once revoked.
func TestTokenCommandsThroughARunningServer(t *testing.T) {
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "live.db")
	p := startServe(t, bin, db)
	remote := []string{"--server", p.base, "--token", crashToken}

	out, errOut, code := runBin(t, bin, append([]string{"token", "add", "--name", "kim", "--role", "editor"}, remote...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	secret := newTokenOf(t, out)

	post := func(auth, query string, vars map[string]any) (int, string) {
		return postGraphQL(t, p.base, auth, query, vars)
	}
	status, body := post("Bearer "+secret, `mutation($i: IncidentInput!) { upsertIncident(input: $i) { userErrors { code } } }`,
		map[string]any{"i": map[string]any{"id": "IL-0001", "org": "Acme", "orgSlug": "acme", "title": map[string]any{"en": "x"},
			"review": map[string]any{"writtenBy": "someone-else"}}})
	if status != http.StatusOK || strings.Contains(body, `"code"`) {
		t.Fatalf("the new token's upsert: %d %s", status, body)
	}
	resp, err := http.Get(p.base + "/api/v1/incidents/IL-0001")
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(rec), `"written_by":"kim"`) {
		t.Fatalf("the author is not the token's name: %s", rec)
	}

	if _, errOut, code := runBin(t, bin, "token", "list", "--db", db, "--open-timeout", "100ms", "--control-socket", "off"); code == 0 || !strings.Contains(errOut, "--server") {
		t.Fatalf("token list --db on a store the server holds: exit %d %s", code, errOut)
	}
	list, errOut, code := runBin(t, bin, append([]string{"token", "list"}, remote...)...)
	if code != 0 || !strings.Contains(list, "kim") || !strings.Contains(list, "editor") || strings.Contains(list, incidentlib.TokenPrefix) {
		t.Fatalf("exit %d: %s %s", code, list, errOut)
	}
	if _, errOut, code := runBin(t, bin, append([]string{"token", "add", "--name", "kim2", "--role", "editor"}, "--server", p.base, "--token", secret)...); code == 0 ||
		!strings.Contains(errOut, incidentlib.EFORBIDDEN) {
		t.Fatalf("an editor's token add: exit %d %s", code, errOut)
	}
	if _, errOut, code := runBin(t, bin, append([]string{"token", "revoke", "kim"}, remote...)...); code != 0 {
		t.Fatalf("revoke: exit %d %s", code, errOut)
	}
	if status, body := post("Bearer "+secret, `{ __typename }`, nil); status != http.StatusUnauthorized || !strings.Contains(body, incidentlib.EUNAUTHENTICATED) {
		t.Fatalf("the revoked token: %d %s", status, body)
	}
}
