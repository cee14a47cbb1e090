package main

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/mcpserver"
)

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
