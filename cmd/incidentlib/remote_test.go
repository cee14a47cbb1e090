package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/mcpserver"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// serveInProcess runs `incidentlib serve` with the admin token until the
// test ends and returns its base URL.
func serveInProcess(t *testing.T, db string) string {
	t.Helper()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	env := map[string]string{"INCIDENTLIB_ADMIN_TOKEN": crashToken}
	go func() {
		var stdout, stderr syncBuffer
		done <- run(ctx, []string{"serve", "--addr", addr, "--db", db, "--seed", "none", "--log-level", "error"},
			func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	base := "http://" + addr
	waitHealthy(t, base, done)
	return base
}

func TestImportAndBackupThroughServer(t *testing.T) {
	dir := t.TempDir()
	base := serveInProcess(t, filepath.Join(dir, "live.db"))
	env := map[string]string{"INCIDENTLIB_TOKEN": crashToken}

	seedsFile := filepath.Join(dir, "seeds.jsonl")
	incs, err := seeds.Incidents()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, inc := range incs {
		b, _ := inc.MarshalJSON()
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(seedsFile, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(badFile, []byte(`{"id":"IL-9001","org":"Acme","org_slug":"acme","title":{"en":"ok"}}
{"id":"IL-9002","org":"Acme","org_slug":"acme","title":{"en":"bad"},"date":"2024-02-30"}
`), 0o600)

	t.Run("Refused", func(t *testing.T) {
		_, errOut, err := runCmd(t, map[string]string{"INCIDENTLIB_TOKEN": "not-the-admin-token"}, "", "import", "--server", base, seedsFile)
		if err == nil || !strings.Contains(err.Error(), incidentlib.EUNAUTHENTICATED) {
			t.Fatalf("%v %s", err, errOut)
		}
		if _, _, err := runCmd(t, nil, "", "import", "--server", base, seedsFile); err == nil {
			t.Fatal("--server without a token was accepted")
		}
		if _, _, err := runCmd(t, env, "", "import", "--server", "ftp://example.com", seedsFile); err == nil {
			t.Fatal("a --server that is not http(s) was accepted")
		}
	})
	t.Run("BadRecordWritesNothing", func(t *testing.T) {
		_, errOut, err := runCmd(t, env, "", "import", "--server", base, badFile)
		if err == nil || !strings.Contains(errOut, "bad.jsonl:2") || !strings.Contains(errOut, "nothing was written") {
			t.Fatalf("%v\n%s", err, errOut)
		}
	})
	t.Run("Imported", func(t *testing.T) {
		out, errOut, err := runCmd(t, env, "", "import", "--server", base, seedsFile)
		if err != nil || !strings.Contains(out, "created") {
			t.Fatalf("%v %s %s", err, out, errOut)
		}
		out, _, err = runCmd(t, env, "", "import", "--server", base, seedsFile)
		if err != nil || !strings.Contains(out, " 0 created, 0 updated") {
			t.Fatalf("importing again: %v %s", err, out)
		}
	})
	t.Run("Chunked", func(t *testing.T) {
		var recs bytes.Buffer
		for i := range 5 {
			recs.WriteString(`{"id":"` + incidentlib.FormatID(uint32(8000+i)) + `","org":"Chunk","org_slug":"chunk","title":{"en":"c"}}` + "\n")
		}
		out, errOut, err := runCmd(t, env, recs.String(), "import", "--server", base, "--chunk", "2", "-")
		if err != nil || !strings.Contains(out, "imported 5 records") || !strings.Contains(out, " 5 created") {
			t.Fatalf("%v %s %s", err, out, errOut)
		}
	})
	t.Run("BackupToFile", func(t *testing.T) {
		path := filepath.Join(dir, "backup.db")
		out, errOut, err := runCmd(t, env, "", "backup", "--server", base, "--output", path)
		if err != nil || !strings.Contains(out, "check: ok") {
			t.Fatalf("%v %s %s", err, out, errOut)
		}
		db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy(), ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		n, err := db.Incidents().CountIncidents(context.Background(), incidentlib.IncidentFilter{})
		if err != nil || n != len(incs)+5 {
			t.Fatalf("the backup holds %d incidents, want %d (%v)", n, len(incs)+5, err)
		}
		// Through IncidentInput and back, every record is as in its file
		// but for the stamp the server gave it. (GraphQL variables are
		// JSON objects without order: the keys of objects inside unknown
		// fields come back sorted, so the records are compared as values.)
		for _, want := range incs {
			got, err := db.Incidents().FindIncidentsByIDs(context.Background(), []string{want.ID})
			if err != nil || got[0] == nil {
				t.Fatalf("%s: %v", want.ID, err)
			}
			c := *got[0]
			c.UpdatedAt = want.UpdatedAt
			a, _ := c.MarshalJSON()
			b, _ := want.MarshalJSON()
			if !sameJSON(t, a, b) {
				t.Fatalf("%s changed on the way:\n got %s\nwant %s", want.ID, a, b)
			}
		}
	})
	t.Run("BackupToStdout", func(t *testing.T) {
		out, errOut, err := runCmd(t, env, "", "backup", "--server", base)
		if err != nil || len(out) == 0 || !strings.Contains(errOut, "bytes from") {
			t.Fatalf("%v %d bytes %s", err, len(out), errOut)
		}
		path := filepath.Join(dir, "stdout.db")
		os.WriteFile(path, []byte(out), 0o600)
		if o, _, err := runCmd(t, nil, "", "check", "--db", path); err != nil {
			t.Fatalf("check of the backup: %v %s", err, o)
		}
	})
	t.Run("BackupRefused", func(t *testing.T) {
		_, _, err := runCmd(t, map[string]string{"INCIDENTLIB_TOKEN": "not-the-admin-token"}, "", "backup", "--server", base)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("%v", err)
		}
		if _, _, err := runCmd(t, env, "", "backup"); err == nil {
			t.Fatal("backup without --server was accepted")
		}
	})
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	for _, p := range []struct {
		data []byte
		v    *any
	}{{a, &x}, {b, &y}} {
		dec := json.NewDecoder(bytes.NewReader(p.data))
		dec.UseNumber()
		if err := dec.Decode(p.v); err != nil {
			t.Fatal(err)
		}
	}
	return reflect.DeepEqual(x, y)
}

// TestOneGraphQLClient: the remote commands and the MCP tools send
// their GraphQL through the one client (mcpserver.GraphQLHTTP.Send), and
// each reads the answer its own way: the commands name the server and
// the code, and say --chunk after a 413; the tools answer with the
// library's codes. A loopback peer answers what each case needs.
func TestOneGraphQLClient(t *testing.T) {
	var (
		mu      sync.Mutex
		headers []http.Header
		answer  = func(w http.ResponseWriter) {}
	)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		headers = append(headers, r.Header.Clone())
		a := answer
		mu.Unlock()
		a(w)
	}))
	defer hs.Close()
	set := func(status int, body string) {
		mu.Lock()
		defer mu.Unlock()
		headers = nil
		answer = func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	server, token, timeout := hs.URL+"/", "tok", time.Minute
	rem, err := remoteFlags{server: &server, token: &token, timeout: &timeout}.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer rem.close()
	if rem.gql.Do == nil || rem.gql.URL != hs.URL+"/graphql" {
		t.Fatalf("the remote's GraphQL client is %+v, want the shared one on %s/graphql", rem.gql, hs.URL)
	}
	ctx := context.Background()
	var out struct{ N int }

	t.Run("Headers", func(t *testing.T) {
		set(200, `{"data":{"n":3}}`)
		for range 2 {
			if err := rem.graphql(ctx, `{ n }`, nil, &out); err != nil || out.N != 3 {
				t.Fatalf("graphql = %v, %+v", err, out)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, h := range headers {
			if h.Get("Authorization") != "Bearer tok" || h.Get("Accept") != "application/json" || h.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v", h)
			}
			if k, err := hex.DecodeString(h.Get("Idempotency-Key")); err != nil || len(k) != 16 {
				t.Errorf("Idempotency-Key %q", h.Get("Idempotency-Key"))
			}
		}
		if len(headers) != 2 || headers[0].Get("Idempotency-Key") == headers[1].Get("Idempotency-Key") {
			t.Errorf("want a key of its own per request, got %d requests", len(headers))
		}
	})
	t.Run("ErrorNamesServerAndCode", func(t *testing.T) {
		set(200, `{"errors":[{"message":"read-only","extensions":{"code":"FORBIDDEN"}}]}`)
		err := rem.graphql(ctx, `{ n }`, nil, &out)
		if err == nil || err.Error() != hs.URL+": FORBIDDEN: read-only" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("TooLargeSaysChunk", func(t *testing.T) {
		set(413, `{"errors":[{"message":"too big","extensions":{"code":"BODY_TOO_LARGE"}}]}`)
		if err := rem.graphql(ctx, `{ n }`, nil, &out); err == nil || !strings.Contains(err.Error(), "BODY_TOO_LARGE") || !strings.Contains(err.Error(), "--chunk N") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NotGraphQL", func(t *testing.T) {
		set(502, `<html>bad gateway</html>`)
		if err := rem.graphql(ctx, `{ n }`, nil, &out); err == nil || !strings.Contains(err.Error(), "answered 502 Bad Gateway, not GraphQL: <html>") {
			t.Fatalf("err = %v", err)
		}
		exec := &mcpserver.GraphQLHTTP{URL: hs.URL + "/graphql", Do: http.DefaultTransport.RoundTrip}
		if err := exec.Query(ctx, `{ n }`, nil, &out); incidentlib.ErrorCode(err) != incidentlib.EUNAVAILABLE {
			t.Fatalf("Query = %v, want %s", err, incidentlib.EUNAVAILABLE)
		}
	})
	t.Run("ToolCodes", func(t *testing.T) {
		exec := &mcpserver.GraphQLHTTP{URL: hs.URL + "/graphql", Do: http.DefaultTransport.RoundTrip}
		for code, want := range map[string]string{"NOT_FOUND": incidentlib.ENOTFOUND, "GRAPHQL_VALIDATION_FAILED": incidentlib.EINVALID, "": incidentlib.EINTERNAL} {
			set(200, `{"errors":[{"message":"m","extensions":{"code":"`+code+`"}}]}`)
			if err := exec.Query(ctx, `{ n }`, nil, &out); incidentlib.ErrorCode(err) != want {
				t.Errorf("code %q: Query = %v, want %s", code, err, want)
			}
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		set(200, `{"data":{"n":`+strings.Repeat(" ", 2048)+`1}}`)
		exec := &mcpserver.GraphQLHTTP{URL: hs.URL + "/graphql", Do: http.DefaultTransport.RoundTrip, MaxResponseBytes: 1024}
		if _, _, err := exec.Send(ctx, `{ n }`, nil); !errors.Is(err, mcpserver.ErrResponseTooLarge) {
			t.Fatalf("Send = %v, want ErrResponseTooLarge", err)
		}
		if err := exec.Query(ctx, `{ n }`, nil, &out); incidentlib.ErrorCode(err) != incidentlib.EUNAVAILABLE {
			t.Fatalf("Query = %v", err)
		}
	})
	t.Run("NoAnswer", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gone := "http://" + ln.Addr().String()
		ln.Close()
		r, err := remoteFlags{server: &gone, token: &token, timeout: &timeout}.dial()
		if err != nil {
			t.Fatal(err)
		}
		defer r.close()
		resp, _, err := r.gql.Send(ctx, `{ n }`, nil)
		if err == nil || resp != nil {
			t.Fatalf("Send to a closed port = %v, %v; want an error and no response", resp, err)
		}
		if err := r.graphql(ctx, `{ n }`, nil, &out); err == nil || strings.Contains(err.Error(), "reading the answer") {
			t.Fatalf("graphql = %v", err)
		}
	})
}
