package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestWrkScriptIsTheListPage: the wrk script docs/performance.md runs sends the
// list page the graphql benchmark measures.
func TestWrkScriptIsTheListPage(t *testing.T) {
	b, err := os.ReadFile("wrk-list.lua")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "wrk.body = '")
	body, _, ok2 := strings.Cut(rest, "'")
	if !ok || !ok2 {
		t.Fatal("wrk-list.lua sets no wrk.body = '...'")
	}
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]int `json:"variables"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("wrk-list.lua's body: %v", err)
	}
	if req.Query != ListPageQuery || len(req.Variables) != 1 || req.Variables["first"] != 20 {
		t.Errorf("wrk-list.lua sends %q with %v, want ListPageQuery with first: 20", req.Query, req.Variables)
	}
}
