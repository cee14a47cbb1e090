package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestDateRangeBodies: the filtered list page's bodies are all different
// and every range holds every date the generator makes (2006 to 2025), so
// that every body has the same answer (the load generator checks it).
func TestDateRangeBodies(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range dateRangeBodies(20, "high-latency") {
		var req struct {
			Query     string
			Variables struct {
				First  int
				Filter struct {
					DateFrom, DateTo string
					Symptoms         []string
				}
			}
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		f := req.Variables.Filter
		if req.Query != FilteredListPageQuery || req.Variables.First != 20 || len(f.Symptoms) != 1 {
			t.Fatalf("body %s", b)
		}
		if f.DateFrom > "2006-01-01" || f.DateTo < "2025-12-31" {
			t.Fatalf("range %s..%s leaves out generated dates", f.DateFrom, f.DateTo)
		}
		seen[string(b)] = true
	}
	if len(seen) != dateRangeVariants {
		t.Fatalf("%d different bodies of %d", len(seen), dateRangeVariants)
	}
}

// TestTargetSendsItsBodiesInTurn: a target with several bodies sends them
// one after the other, through either client.
func TestTargetSendsItsBodiesInTurn(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[string(b)]++
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	count := func(b []byte) int { // the handler counts on the server's goroutines
		mu.Lock()
		defer mu.Unlock()
		return got[string(b)]
	}
	tg := loadTarget{url: srv.URL + "/graphql", bodies: [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`), []byte(`{"a":3}`)}}
	s, err := dialTarget(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.conn.Close()
	for range 6 {
		if _, err := s.send(nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range tg.bodies {
		if count(b) != 2 {
			t.Fatalf("over one connection: %d of %s", count(b), b)
		}
	}
	client := &http.Client{}
	for range 60 {
		if _, err := tg.do(context.Background(), client, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range tg.bodies {
		if count(b) <= 2 {
			t.Fatalf("through the transport, %s was never drawn", b)
		}
	}
}
